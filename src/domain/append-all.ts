/**
 * `target.push(...items.slice(0, end))` without the spread: a spread passes every item as an
 * argument, which overflows the call stack past about 125,000 items.
 */
export function appendAll<T>(target: T[], items: readonly T[], end = items.length): void {
  for (let i = 0; i < end; i++) target.push(items[i] as T);
}
