/**
 * Regular expressions written by users (plugin rules, ifElse conditions, filters) run on RE2,
 * whose matching time is linear in the input: a pattern like `^(a+)+$` cannot stall the event
 * loop as it does on JavaScript's backtracking engine. Never pass user text to `new RegExp`.
 */
import { RE2JS } from 're2js';

/** Longer patterns are refused: compiling is linear too, but nobody needs more. */
export const MAX_USER_PATTERN_LENGTH = 1000;

export interface UserRegex {
  /** Whether the pattern matches anywhere in the text (as RegExp.prototype.test without `g`). */
  test(text: string): boolean;
}

const FLAG_BITS: Record<string, number> = {
  i: RE2JS.CASE_INSENSITIVE,
  m: RE2JS.MULTILINE,
  s: RE2JS.DOTALL,
};

/**
 * JavaScript's `\uXXXX` and `\u{X…}` escapes in RE2's spelling (`\x{X…}`); every other escape is
 * left as written (an escaped backslash is skipped whole, so `\\u0041` stays literal).
 */
export function toRe2Escapes(pattern: string): string {
  if (!pattern.includes('\\u')) return pattern;
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i];
    if (char !== '\\') {
      out += char;
      continue;
    }
    const rest = pattern.slice(i + 1);
    const unicode = /^u([0-9a-fA-F]{4})/.exec(rest) ?? /^u\{([0-9a-fA-F]{1,6})\}/.exec(rest);
    if (unicode) {
      out += `\\x{${unicode[1]}}`;
      i += unicode[0].length;
    } else {
      out += char + (pattern[i + 1] ?? '');
      i++;
    }
  }
  return out;
}

/**
 * Compiles a user pattern with JavaScript-style flags (`i`, `m`, `s`; `g`, `y` and `u` do not
 * change a yes/no test and are ignored). Returns undefined when the pattern is too long, uses
 * a feature RE2 lacks (backreferences, lookaround) or is not a valid expression.
 */
export function compileUserRegex(pattern: string, flags = ''): UserRegex | undefined {
  if (pattern.length > MAX_USER_PATTERN_LENGTH) return undefined;
  let bits = 0;
  for (const flag of flags) {
    if (flag in FLAG_BITS) bits |= FLAG_BITS[flag] as number;
    else if (!'guy'.includes(flag)) return undefined;
  }
  try {
    const compiled = RE2JS.compile(toRe2Escapes(pattern), bits);
    return { test: (text: string) => compiled.matcher(text).find() };
  } catch {
    return undefined;
  }
}

/** `/body/flags` as users write it in rules, or undefined when the text is not in that form. */
export function parseSlashedRegex(text: string): { pattern: string; flags: string } | undefined {
  const end = text.lastIndexOf('/');
  if (!text.startsWith('/') || end < 2) return undefined;
  const flags = text.slice(end + 1);
  return /^[a-z]*$/.test(flags) ? { pattern: text.slice(1, end), flags } : undefined;
}
