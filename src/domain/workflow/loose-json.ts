/**
 * JSON bodies typed in the workflow editor, read as the reference reads them (JSON5): besides
 * strict JSON, `//` and `/* *\/` comments and trailing commas are accepted. Strings are copied
 * untouched; anything else that strict JSON refuses is still an error.
 */
export function parseLooseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (strictError) {
    const relaxed = stripCommentsAndTrailingCommas(text);
    if (relaxed === text) throw strictError;
    return JSON.parse(relaxed) as unknown;
  }
}

/** One forward scan: comments dropped, a comma followed only by blanks before `}`/`]` dropped. */
function stripCommentsAndTrailingCommas(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const char = text[i]!;
    if (char === '"') {
      const end = stringEnd(text, i);
      out += text.slice(i, end);
      i = end;
    } else if (char === '/' && text[i + 1] === '/') {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end;
    } else if (char === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end === -1 ? text.length : end + 2;
    } else if (char === ',' && ['}', ']'].includes(text[nextSignificant(text, i + 1)] ?? '')) {
      i += 1;
    } else {
      out += char;
      i += 1;
    }
  }
  return out;
}

/** The index of the next character that is neither blank nor inside a comment. */
function nextSignificant(text: string, from: number): number {
  let i = from;
  while (i < text.length) {
    if (/\s/.test(text[i]!)) i += 1;
    else if (text.startsWith('//', i)) {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end;
    } else if (text.startsWith('/*', i)) {
      const end = text.indexOf('*/', i + 2);
      i = end === -1 ? text.length : end + 2;
    } else return i;
  }
  return i;
}

/** The index just past the string literal starting at `start` (a `"`). */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length) {
    if (text[i] === '\\') i += 2;
    else if (text[i] === '"') return i + 1;
    else i += 1;
  }
  return text.length;
}
