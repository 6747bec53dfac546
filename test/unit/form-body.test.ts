import { describe, expect, it } from 'vitest';
import { FORM_PROBLEM, parseGoForm } from '../../src/cluster/oauth/form-body.js';

describe('parseGoForm (Go url.ParseQuery)', () => {
  it('decodes + and escapes, keeps every value of a repeated key in order, skips empty pairs', () => {
    expect(parseGoForm('a=1+2&b=%41%c3%a9&a=3&&c')).toEqual({ a: ['1 2', '3'], b: 'Aé', c: '' });
  });
  it('skips a pair with a bad escape or a semicolon and keeps the first problem', () => {
    const form = parseGoForm('x=%g1&y=2&z=a;b&w=%');
    expect(Object.fromEntries(Object.entries(form))).toEqual({ y: '2' });
    expect(form[FORM_PROBLEM]).toBe('invalid URL escape "%g1"');
    expect(parseGoForm('k=v')[FORM_PROBLEM]).toBeUndefined();
  });
});
