import { describe, expect, it } from 'vitest';
import { evaluateMathExpression } from '../../src/platform/apps/system-plugins/math-expression.js';
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
});
