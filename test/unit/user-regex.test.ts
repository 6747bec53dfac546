import { describe, expect, it } from 'vitest';
import { compileUserRegex, toRe2Escapes } from '../../src/domain/user-regex.js';

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
