/** A time as a wall clock shows it in an IANA time zone: `YYYY-MM-DD HH:mm:ss` and the weekday. */

const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/**
 * One formatter per zone (null: a zone this runtime does not know): building an Intl formatter
 * costs more than the rest of a chat turn's setup. Zones come from user input (a plugin's
 * `timezone`), so the cache is bounded: past the bound it starts again.
 */
const formatters = new Map<string, Intl.DateTimeFormat | null>();
const MAX_CACHED_ZONES = 1000;

function formatterOf(timeZone: string): Intl.DateTimeFormat | null {
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    try {
      formatter = new Intl.DateTimeFormat('en-US', {
        timeZone,
        hourCycle: 'h23',
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
        weekday: 'long',
      });
    } catch {
      formatter = null;
    }
    if (formatters.size >= MAX_CACHED_ZONES) formatters.clear();
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** `date` in `timeZone`; null when this runtime does not know the zone (each caller decides what that means). */
export function zonedDateTime(date: Date, timeZone: string): { dateTime: string; weekday: string } | null {
  if (timeZone === 'UTC') return { dateTime: date.toISOString().replace('T', ' ').slice(0, 19), weekday: WEEKDAYS[date.getUTCDay()]! };
  const formatter = formatterOf(timeZone);
  if (!formatter) return null;
  const part: Record<string, string> = {};
  for (const { type, value } of formatter.formatToParts(date)) part[type] = value;
  return { dateTime: `${part.year}-${part.month}-${part.day} ${part.hour}:${part.minute}:${part.second}`, weekday: part.weekday! };
}
