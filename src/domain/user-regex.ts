/**
 * Regular expressions written by users (plugin rules, ifElse conditions, filters) run on RE2,
 * whose matching time is linear in the input: a pattern like `^(a+)+$` cannot stall the event
 * loop as it does on JavaScript's backtracking engine. Never pass user text to `new RegExp`.
 *
 * Linear is not cheap: RE2JS steps every instruction of the compiled program over every
 * character (a 15-character `[^x]{1000}[^ab]` is a 1,000-instruction program: 0.3 s per 20 KB),
 * and compiling costs about as much per instruction. So each call that runs user patterns (one
 * TFSwitch request, one ifElse node run) spends from a UserRegexBudget, charged before the work
 * is done; running out is a UserRegexTooCostlyError, which the caller reports as a refusal.
 */
import { RE2JS } from 're2js';
import { textHead } from './text-cut.js';

/** Longer patterns are refused: compiling is linear too, but nobody needs more. */
export const MAX_USER_PATTERN_LENGTH = 1000;

/**
 * Regex work one call may do, in steps: one program instruction over one character of text.
 * A step costs 10 to 25 ns on this engine (measured; the dearer ones are large Unicode classes
 * under `i`), so a call holds the event loop for at most about 50 ms.
 */
export const USER_REGEX_WORK_PER_CALL = 2_000_000;

/**
 * Steps charged for compiling: a base (about 10 µs: refusing an invalid pattern costs that too,
 * for its exception) and so much per pattern character and per program instruction (about 1 µs).
 */
const COMPILE_BASE_STEPS = 500;
const COMPILE_STEPS_PER_UNIT = 50;

const count = (n: number) => n.toLocaleString('en');

/** More work than a UserRegexBudget has left; nothing of that work was done. */
export class UserRegexTooCostlyError extends Error {
  override name = 'UserRegexTooCostlyError';
}

/** The regex work a call may still do (see USER_REGEX_WORK_PER_CALL). */
export class UserRegexBudget {
  private left: number;
  constructor(readonly total = USER_REGEX_WORK_PER_CALL) {
    this.left = total;
  }

  /** Takes `steps`, or throws UserRegexTooCostlyError saying what would have cost them. */
  spend(steps: number, what: () => string): void {
    if (steps > this.left) {
      const spent = this.total - this.left;
      const already = spent > 0 ? ` (${count(spent)} spent already)` : '';
      throw new UserRegexTooCostlyError(`${what()} would take ${count(steps)} steps, more than the ${count(this.total)} one call may spend on regular expressions${already}: shorten the text or the pattern, or use fewer patterns`);
    }
    this.left -= steps;
  }
}

export interface UserRegex {
  /**
   * Whether the pattern matches anywhere in the text (as RegExp.prototype.test without `g`).
   * Throws UserRegexTooCostlyError, without testing, when the budget cannot pay for it.
   */
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

/** A pattern as an error message quotes it. */
function quote(pattern: string): string {
  return `/${pattern.length > 60 ? `${textHead(pattern, 57)}...` : pattern}/`;
}

/**
 * Compiles a user pattern with JavaScript-style flags (`i`, `m`, `s`; `g`, `y` and `u` do not
 * change a yes/no test and are ignored). Returns undefined when the pattern is too long, uses
 * a feature RE2 lacks (backreferences, lookaround) or is not a valid expression. Compiling and
 * each test are paid from `budget` (by default one of this pattern's own).
 */
export function compileUserRegex(pattern: string, flags = '', budget = new UserRegexBudget()): UserRegex | undefined {
  if (pattern.length > MAX_USER_PATTERN_LENGTH) return undefined;
  let bits = 0;
  for (const flag of flags) {
    if (flag in FLAG_BITS) bits |= FLAG_BITS[flag] as number;
    else if (!'guy'.includes(flag)) return undefined;
  }
  const source = toRe2Escapes(pattern);
  // Paid before compiling, on an upper bound: the program is only known once the work is done.
  const bound = programSizeBound(source);
  budget.spend(COMPILE_BASE_STEPS + COMPILE_STEPS_PER_UNIT * (source.length + bound), () => `compiling ${quote(pattern)} (up to ${count(bound)} instructions: a counted repetition such as {1000} copies what it repeats)`);
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(source, bits);
  } catch {
    return undefined;
  }
  const instructions = Number(compiled.re2().numberOfInstructions());
  return {
    test: (text: string) => {
      budget.spend(instructions * (text.length + 1), () => `testing ${quote(pattern)} (${count(instructions)} instructions) against ${count(text.length)} characters`);
      return compiled.matcher(text).find();
    },
  };
}

/** `/body/flags` as users write it in rules, or undefined when the text is not in that form. */
export function parseSlashedRegex(text: string): { pattern: string; flags: string } | undefined {
  const end = text.lastIndexOf('/');
  if (!text.startsWith('/') || end < 2) return undefined;
  const flags = text.slice(end + 1);
  return /^[a-z]*$/.test(flags) ? { pattern: text.slice(1, end), flags } : undefined;
}

/** RE2 refuses counts above this; a larger one is read as this plus one (the pattern fails to compile). */
const MAX_REPEAT = 1000;

interface Frame {
  /** Completed alternatives, with one instruction per `|`. */
  done: number;
  /** The alternative being read. */
  current: number;
  /** The last atom of `current`, which a quantifier repeats. */
  last: number;
  capturing: boolean;
}

/**
 * An upper bound of the instructions RE2 compiles `pattern` (RE2 syntax) to, read without
 * compiling it: one per character, class or assertion, two per group or quantifier, one per
 * alternative, and a counted repetition `{n,m}` as m copies of what it repeats. What this reader
 * cannot make out (an invalid pattern) only makes the bound larger; RE2 then refuses the pattern.
 */
export function programSizeBound(pattern: string): number {
  const stack: Frame[] = [];
  let frame: Frame = { done: 0, current: 0, last: 0, capturing: false };
  const atom = (size: number) => {
    frame.current += size;
    frame.last = size;
  };
  const repeat = (size: (last: number) => number) => {
    const grown = size(frame.last);
    frame.current += grown - frame.last;
    frame.last = grown;
  };
  // An empty alternative (or group, or pattern) still compiles to one instruction.
  const alternatives = () => frame.done + Math.max(frame.current, 1);
  const closeFrame = () => {
    const size = alternatives() + (frame.capturing ? 2 : 0);
    frame = stack.pop() as Frame;
    atom(size);
  };
  let i = 0;
  while (i < pattern.length) {
    const char = pattern[i] as string;
    if (char === '\\') {
      if (pattern[i + 1] === 'Q') {
        // \Q…\E: each character a literal.
        const end = pattern.indexOf('\\E', i + 2);
        const stop = end < 0 ? pattern.length : end;
        for (let k = i + 2; k < stop; k++) atom(1);
        i = end < 0 ? stop : end + 2;
      } else {
        i = skipEscape(pattern, i);
        atom(1);
      }
    } else if (char === '[') {
      i = skipClass(pattern, i);
      atom(1);
    } else if (char === '(') {
      const header = /^\(\?(?:P?<\w*>|([a-zA-Z-]*)(:|\)))?/.exec(pattern.slice(i, i + 40));
      const length = header?.[0].length ?? 1;
      if (header?.[2] === ')') {
        // A flag group `(?i)` compiles to nothing.
        i += length;
        continue;
      }
      stack.push(frame);
      frame = { done: 0, current: 0, last: 0, capturing: header?.[2] !== ':' };
      i += length;
    } else if (char === ')') {
      if (stack.length > 0) closeFrame();
      else atom(1);
      i++;
    } else if (char === '|') {
      frame.done = alternatives() + 1;
      frame.current = 0;
      frame.last = 0;
      i++;
    } else if (char === '*' || char === '+' || char === '?') {
      repeat((last) => last + 2);
      i++;
    } else if (char === '{') {
      const counted = /^\{(\d+)(?:(,)(\d*))?\}/.exec(pattern.slice(i, i + 24));
      if (counted) {
        const min = Math.min(Number(counted[1]), MAX_REPEAT + 1);
        const max = counted[3] ? Math.min(Number(counted[3]), MAX_REPEAT + 1) : counted[2] ? min + 1 : min;
        // m copies, and an alternation for each optional one (RE2 expands the repetition).
        repeat((last) => Math.max(min, max, 1) * (last + 1) + 1);
        i += counted[0].length;
      } else {
        atom(1);
        i++;
      }
    } else {
      atom(1);
      i++;
    }
  }
  while (stack.length > 0) closeFrame();
  // The program's fail and match instructions.
  return alternatives() + 2;
}

/** The index after the escape starting at `start` (a backslash): `\x{…}`, `\p{…}`, `\pL`, `\x41`, `\d` … */
function skipEscape(pattern: string, start: number): number {
  const kind = pattern[start + 1];
  if ((kind === 'x' || kind === 'p' || kind === 'P') && pattern[start + 2] === '{') {
    const end = pattern.indexOf('}', start + 3);
    return end < 0 ? pattern.length : end + 1;
  }
  if (kind === 'x') {
    let end = start + 2;
    while (end < start + 4 && /[0-9a-fA-F]/.test(pattern[end] ?? '')) end++;
    return end;
  }
  if (kind === 'p' || kind === 'P') return Math.min(start + 3, pattern.length);
  return Math.min(start + 2, pattern.length);
}

/**
 * The index after the character class starting at `start` (a `[`), read as RE2 reads it: a `]`
 * right after `[` or `[^` is a member, `[:name:]` is a named class, escapes are skipped whole.
 */
function skipClass(pattern: string, start: number): number {
  let i = start + 1;
  if (pattern[i] === '^') i++;
  let first = true;
  while (i < pattern.length) {
    const char = pattern[i];
    if (char === ']' && !first) return i + 1;
    first = false;
    if (char === '[' && pattern[i + 1] === ':') {
      const end = pattern.indexOf(':]', i + 1);
      if (end >= 0) {
        i = end + 2;
        continue;
      }
    }
    i = char === '\\' ? skipEscape(pattern, i) : i + 1;
  }
  return i;
}
