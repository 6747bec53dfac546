import { describe, expect, it } from 'vitest';
import { evaluateMathExpression } from '../../src/platform/apps/system-plugins/math-expression.js';
import { UserRegexTooCostlyError } from '../../src/domain/user-regex.js';
import { fillTemplate, tfSwitch } from '../../src/platform/apps/system-plugins/text-plugins.js';

describe('evaluateMathExpression', () => {
  it.each([
    ['1 + 2 * 3', 7],
    ['(1 + 2) * 3', 9],
    ['2 ^ 3 ^ 2', 512],
    ['2 ** 10', 1024],
    ['-2 ^ 2', -4],
    ['10 % 4', 2],
    ['7 / 2', 3.5],
    ['sqrt(16) + abs(-3)', 7],
    ['max(1, 5, 3) - min(4, 2)', 3],
    ['round(pi * 100) / 100', 3.14],
    ['1e3 + .5', 1000.5],
    ['6 × 7 ÷ 2', 21],
    ['--3', 3],
  ])('%s = %d', (expr, expected) => {
    expect(evaluateMathExpression(expr)).toBeCloseTo(expected, 10);
  });

  it.each([
    ['', /empty/],
    ['1 +', /ended/],
    ['(1 + 2', /Expected '\)'/],
    ['1 / 0', /finite/],
    ['process.exit()', /Unexpected character|Unknown/],
    ['constructor', /Unknown name/],
    ['alert(1)', /Unknown function/],
    ['constructor(1)', /Unknown function/],
    ['toString', /Unknown name/],
    ['2 3', /Unexpected/],
    ['"a"', /Unexpected character/],
    [`${'('.repeat(200)}1${')'.repeat(200)}`, /nested too deeply/],
  ])('refuses %s', (expr, message) => {
    expect(() => evaluateMathExpression(expr)).toThrow(message);
  });
});

describe('text plugins', () => {
  it('fills placeholders with stringified values, keys taken literally', () => {
    expect(fillTemplate('{{a}}-{{b}}-{{c}}-{{a.b}}-{{x}}', { a: 1, b: true, c: { k: 'v' }, 'a.b': 'dot' })).toBe('1-true-{"k":"v"}-dot-{{x}}');
    expect(fillTemplate('{{a}} {{o}}', { a: 'x', o: { k: 1 } }, false)).toBe('x {{o}}');
    expect(fillTemplate('{{a}}', { a: '$&$1' })).toBe('$&$1');
  });
  it.each([
    ['hello', '', true],
    ['', '', false],
    ['null', '', false],
    ['none', '', false],
    ['stop', 'go\nstop', false],
    ['Stop now', '/^stop/i', false],
    ['keep', '/^stop/i', true],
    ['[', '/[/', true],
  ])('TFSwitch(%j, %j) = %s', (input, rule, expected) => {
    expect(tfSwitch(input, rule)).toBe(expected);
  });
  it('non-text input uses truthiness', () => {
    expect(tfSwitch(0)).toBe(false);
    expect(tfSwitch({})).toBe(true);
  });
  it('bounds the regex work of a rule: the line that would overdraw it is refused, naming it', () => {
    const costly = '/[^x]{1000}[^ab]/';
    // 10 M characters against a 1,003-instruction program: minutes if it ran.
    const huge = 'ab'.repeat(5_000_000);
    expect(() => tfSwitch(huge, `stop\n${costly}`)).toThrow(UserRegexTooCostlyError);
    expect(() => tfSwitch(huge, `stop\n${costly}`)).toThrow(/^line 2: testing \/\[\^x\]\{1000\}\[\^ab\]\/ \(1,003 instructions\)/);
    // 20,000 costly lines against 1,000 characters share one budget: refused at the second.
    expect(() => tfSwitch('ab'.repeat(500), Array(20_000).fill(costly).join('\n'))).toThrow(/^line 2: .*spent already/);
    // Compiling is paid for too, invalid patterns included: 250,000 of them (a 1 MB body), about 2.5 s unbounded.
    expect(() => tfSwitch('x', Array(250_000).fill('/(/').join('\n'))).toThrow(/^line \d{4}: compiling \/\(\/ .*spent already/);
    // A line that matches answers before a costly one is reached; exact lines cost nothing.
    expect(tfSwitch('ab'.repeat(50_000), `/^ab/\n${costly}`)).toBe(false);
    expect(tfSwitch('stop', `${Array(20_000).fill('go').join('\n')}\nstop`)).toBe(false);
  });
});
