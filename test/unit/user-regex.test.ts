import { RE2JS } from 're2js';
import { describe, expect, it } from 'vitest';
import { compileUserRegex, programSizeBound, toRe2Escapes, UserRegexBudget, UserRegexTooCostlyError } from '../../src/domain/user-regex.js';

describe('user regular expressions', () => {
  it('spells JavaScript unicode escapes as RE2 does, leaving escaped backslashes and other escapes alone', () => {
    expect(toRe2Escapes('[\\u4e00-\\u9fa5]')).toBe('[\\x{4e00}-\\x{9fa5}]');
    expect(toRe2Escapes('\\u{1F600}')).toBe('\\x{1F600}');
    expect(toRe2Escapes('\\\\u0041')).toBe('\\\\u0041');
    expect(toRe2Escapes('\\d+\\.\\uZZZZ')).toBe('\\d+\\.\\uZZZZ');
  });

  it('matches as JavaScript would for those escapes, and refuses what RE2 cannot run', () => {
    expect(compileUserRegex('^[\\u4e00-\\u9fa5]+$')?.test('中文')).toBe(true);
    expect(compileUserRegex('^[\\u4e00-\\u9fa5]+$')?.test('abc')).toBe(false);
    expect(compileUserRegex('\\\\u0041')?.test('\\u0041')).toBe(true);
    expect(compileUserRegex('(?=a)')).toBeUndefined();
    expect(compileUserRegex('(a)\\1')).toBeUndefined();
    // Linear time: a pattern that backtracks exponentially in JavaScript answers at once.
    expect(compileUserRegex('^(a+)+$')?.test(`${'a'.repeat(5000)}b`)).toBe(false);
  });
});

/** What RE2 compiles a pattern to, or undefined when it refuses the pattern. */
function instructionsOf(pattern: string): number | undefined {
  try {
    return Number(RE2JS.compile(pattern).re2().numberOfInstructions());
  } catch {
    return undefined;
  }
}

describe('the work of user regular expressions', () => {
  it('bounds the compiled program from the pattern text, never below what RE2 compiles', () => {
    const cases = [
      '[^x]{1000}[^ab]',
      '(?:[^x]{999}|[^y]{999})[^ab]',
      '(?:[^x]{30}){30}',
      '[^x]{0,1000}',
      '(?i)(?:\\p{L}|\\p{N}){1000}!',
      '^((\\+|00)86)?1[3-9]\\d{9}$',
      '(?P<year>\\d{4})-(?<month>\\d{2})',
      '[]a]{500}|[^]b]{500}',
      '[[:alpha:]({]{300}x',
      '\\Q(a{3})\\E{700}',
      '\\x{1000}{700}\\p{Greek}{200}',
      '(?s-i:.){1000}',
      '(|a|){300}',
      `(?:${'abcdefghij'.repeat(90)}){1000}`,
    ];
    for (const pattern of cases) {
      const compiled = instructionsOf(pattern);
      if (compiled !== undefined) expect(programSizeBound(pattern), pattern).toBeGreaterThanOrEqual(compiled);
    }
    // Random patterns from the syntax's awkward corners (classes, escapes, groups, counts).
    let seed = 7;
    const pick = <T>(list: readonly T[]): T => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return list[(seed >> 8) % list.length] as T;
    };
    const tokens = ['(', ')', '[', ']', '{', '}', '|', '*', '+', '?', '\\', '^', '$', '.', ':', ',', '0', '2', '9', 'a', 'Q', 'E', 'p', 'x', '-', '<', '>', '{3}', '{2,4}', '{1,}', '{12}', '[:alpha:]', '(?:', '(?i)', '(?P<n>', '\\x{', 'L}', 'é'];
    let checked = 0;
    for (let round = 0; round < 30_000; round++) {
      const pattern = Array.from({ length: 1 + (round % 16) }, () => pick(tokens)).join('');
      const compiled = instructionsOf(pattern);
      if (compiled === undefined) continue;
      checked++;
      expect(programSizeBound(pattern), pattern).toBeGreaterThanOrEqual(compiled);
    }
    expect(checked).toBeGreaterThan(5000);
  });

  it('refuses a test before running it when the text is too long for the program', () => {
    const regex = compileUserRegex('[^x]{1000}[^ab]');
    // 10 M characters × 1,003 instructions: minutes if it ran.
    expect(() => regex?.test('ab'.repeat(5_000_000))).toThrow(UserRegexTooCostlyError);
    expect(() => regex?.test('ab'.repeat(5_000_000))).toThrow(/^testing \/\[\^x\]\{1000\}\[\^ab\]\/ \(1,003 instructions\) against 10,000,000 characters would take 10,030,001,003 steps/);
    // The same program against a short text runs.
    expect(compileUserRegex('[^x]{1000}[^ab]')?.test('ab'.repeat(500))).toBe(false);
  });

  it('refuses to compile a pattern whose program is too large, before compiling it', () => {
    const huge = `(?:${'abcdefghij'.repeat(90)}){1000}`;
    expect(() => compileUserRegex(huge)).toThrow(/^compiling \/\(\?:abcdefghij.*\.\.\.\/ \(up to 901,003 instructions/);
    // Counts RE2 refuses stay invalid patterns (compared as text by TFSwitch), not refusals.
    expect(compileUserRegex('a{5000}')).toBeUndefined();
    expect(compileUserRegex('a{1001}')).toBeUndefined();
  });

  it('shares one budget between the patterns of a call', () => {
    const budget = new UserRegexBudget();
    const text = 'ab'.repeat(500);
    let tested = 0;
    // 10,000 costly patterns would take minutes; the budget pays for one.
    expect(() => {
      for (let i = 0; i < 10_000; i++) {
        compileUserRegex(`[^${String.fromCharCode(0x4e00 + i)}]{1000}[^ab]`, '', budget)?.test(text);
        tested++;
      }
    }).toThrow(/spent already/);
    expect(tested).toBe(1);
    // Ordinary patterns on a long text fit many times over.
    const ordinary = new UserRegexBudget();
    const answer = `Sorry, ${'I cannot answer that. '.repeat(2000)}`;
    for (const [pattern, flags, expected] of [
      ['^sorry', 'i', true],
      ['^\\s*$', '', false],
      ['无法回答|不知道', '', false],
      ['cannot answer', '', true],
    ] as const) {
      expect(compileUserRegex(pattern, flags, ordinary)?.test(answer), pattern).toBe(expected);
    }
  });
});
