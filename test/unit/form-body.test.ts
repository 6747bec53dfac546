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
  it('decodes characters above U+FFFF raw or escaped, as Go does over the bytes', () => {
    expect(parseGoForm('password=Emoji-pass1😀&b=%F0%9F%98%80+%f0%9f%98%80&c=😀%20𞤢+é')).toEqual({ password: 'Emoji-pass1😀', b: '😀 😀', c: '😀 𞤢 é' });
    expect(parseGoForm('😀=%F0%9F%98%80')).toEqual({ '😀': '😀' });
  });
  it("quotes a bad escape's bytes as Go's strconv.Quote does", () => {
    expect(parseGoForm('x=%😀')[FORM_PROBLEM]).toBe('invalid URL escape "%\\xf0\\x9f"');
    expect(parseGoForm('x=%é')[FORM_PROBLEM]).toBe('invalid URL escape "%é"');
    expect(parseGoForm('x=%"a')[FORM_PROBLEM]).toBe('invalid URL escape "%\\"a"');
  });
});
