/** Dates as the workflow variables show them; formatters are built once per time zone. */
const weekdayFormats = new Map<string, Intl.DateTimeFormat>();

function weekday(date: Date, timeZone: string): string {
  let format = weekdayFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { weekday: 'long', timeZone });
    weekdayFormats.set(timeZone, format);
  }
  return format.format(date);
}

/** The reference's `YYYY-MM-DD HH:mm:ss dddd` (UTC here; the web client sends its own cTime). */
export function formatChatTime(date: Date): string {
  return `${date.toISOString().replace('T', ' ').slice(0, 19)} ${weekday(date, 'UTC')}`;
}
