/**
 * Fixed-length cuts of text that is stored or shown (titles, previews, error messages, search
 * tokens). Lengths are in UTF-16 units, as `String#slice` counts them, but a cut never falls
 * between the two halves of a surrogate pair: the lone half would be stored by BSON as U+FFFD
 * (half an emoji becomes a replacement character).
 */
const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/** The first `max` units of `text`, one fewer when the cut would split a surrogate pair. */
export function textHead(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 0) return '';
  const splitsPair = isHighSurrogate(text.charCodeAt(max - 1)) && isLowSurrogate(text.charCodeAt(max));
  return text.slice(0, splitsPair ? max - 1 : max);
}

/** The last `max` units of `text`, one fewer when the cut would split a surrogate pair. */
export function textTail(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 0) return '';
  const start = text.length - max;
  const splitsPair = isLowSurrogate(text.charCodeAt(start)) && isHighSurrogate(text.charCodeAt(start - 1));
  return text.slice(splitsPair ? start + 1 : start);
}
