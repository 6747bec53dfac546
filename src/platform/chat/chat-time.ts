const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** The last second formatted per time zone: every turn formats the time, most in a second already seen. */
const lastByZone = new Map<string, { second: number; text: string }>();
/** One formatter per zone: building an Intl formatter costs more than the rest of the turn setup. */
const formatters = new Map<string, Intl.DateTimeFormat | null>();

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
      // A stored zone this runtime does not know: UTC.
      formatter = null;
    }
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

function formatUtc(date: Date): string {
  return `${date.toISOString().replace('T', ' ').slice(0, 19)} ${WEEKDAYS[date.getUTCDay()]}`;
}

function formatInZone(date: Date, formatter: Intl.DateTimeFormat): string {
  const part: Record<string, string> = {};
  for (const { type, value } of formatter.formatToParts(date)) part[type] = value;
  return `${part.year}-${part.month}-${part.day} ${part.hour}:${part.minute}:${part.second} ${part.weekday}`;
}

/**
 * The reference's `YYYY-MM-DD HH:mm:ss dddd` in the user's time zone (UTC without one, or for a
 * zone this runtime does not know); the web client sends its own cTime.
 */
export function formatChatTime(date: Date, timeZone = 'UTC'): string {
  const second = Math.floor(date.getTime() / 1000);
  const last = lastByZone.get(timeZone);
  if (last?.second === second) return last.text;
  const formatter = timeZone === 'UTC' ? null : formatterOf(timeZone);
  const text = formatter ? formatInZone(date, formatter) : formatUtc(date);
  lastByZone.set(timeZone, { second, text });
  return text;
}
