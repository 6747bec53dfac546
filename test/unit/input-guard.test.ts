import { describe, expect, it } from 'vitest';
import { assertSafeInput, findInputProblem, MAX_INPUT_DEPTH } from '../../src/infra/input-guard.js';

function nested(levels: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
}

describe('request input guard', () => {
  it.each([
    ['a plain body', { name: 'x', list: [1, 'two', { deep: true }] }, null],
    ['NUL in a string', { data: { q: 'a\u0000b' } }, { kind: 'nul', path: 'data.q' }],
    ['NUL in a key', { meta: { 'k\u0000': 1 } }, { kind: 'nul', path: 'meta' }],
    ['NUL in an array element', { list: ['ok', 'x\u0000'] }, { kind: 'nul', path: 'list.1' }],
    ['NUL in the value itself', 'x\u0000', { kind: 'nul', path: '' }],
    ['a __proto__ key (as a query string parses it)', Object.assign(Object.create(null), { x: '1', ['__proto__']: ['a', 'b'] }), { kind: 'proto', path: '__proto__' }],
    ['a nested __proto__ key', { meta: JSON.parse('{"__proto__":{"polluted":true}}') }, { kind: 'proto', path: 'meta.__proto__' }],
    ['a key that only contains proto', { __proto_x: 1, constructor_name: 'a' }, null],
    ['a constructor holding a prototype (what a recursive merge follows)', { x: { constructor: { prototype: { isRoot: true } } } }, { kind: 'proto', path: 'x.constructor' }],
    ['a constructor that is only a value', { constructor: 'Foo', meta: { constructor: { name: 'Bar' } } }, null],
    // String() and Number() throw on such an object: variables, node inputs and metadata reach them.
    ['a toString key', { variables: { lang: { toString: 0 } } }, { kind: 'conversion', path: 'variables.lang.toString' }],
    ['a valueOf key', { valueOf: 'x' }, { kind: 'conversion', path: 'valueOf' }],
    ['keys that only contain them', { toStringify: 1, value_of: 2 }, null],
    // BSON holds UTF-8: an unpaired surrogate in a string is mended to U+FFFD (below); in a key it is refused.
    ['an unpaired surrogate in a string (mended)', { data: { q: `a${'\ud800'}b` } }, null],
    ['an unpaired low surrogate in an array element (mended)', { list: ['ok', `${'\udc00'}x`] }, null],
    ['an unpaired surrogate in a key', { meta: { [`k${'\udbff'}`]: 1 } }, { kind: 'surrogate', path: 'meta' }],
    ['an unpaired surrogate in the value itself', `x${'\ud800'}`, { kind: 'surrogate', path: '' }],
    ['a surrogate pair (an emoji), in a string and a key', { '😀': 'smile 😀', list: ['𝄞'] }, null],
    // JSON's 1e400 parses to Infinity.
    ['an infinite number', { metadata: { n: Number.POSITIVE_INFINITY } }, { kind: 'nonFinite', path: 'metadata.n' }],
    ['a negative infinite number in an array', { list: [1, -Infinity] }, { kind: 'nonFinite', path: 'list.1' }],
    ['NaN', { n: Number.NaN }, { kind: 'nonFinite', path: 'n' }],
    ['a non-finite number as the value itself', Infinity, { kind: 'nonFinite', path: '' }],
    ['finite numbers at the edges', { max: Number.MAX_VALUE, min: -Number.MAX_VALUE, tiny: 5e-324, zero: -0 }, null],
    ['nesting at the limit', nested(MAX_INPUT_DEPTH), null],
    ['nesting over the limit', { chatConfig: nested(MAX_INPUT_DEPTH) }, { kind: 'depth', path: `chatConfig${'.a'.repeat(MAX_INPUT_DEPTH - 1)}` }],
  ])('%s', (_name, value, expected) => {
    expect(findInputProblem(value)).toEqual(expected);
  });

  it('mends unpaired surrogates of the strings inside a value in place (U+FFFD, as BSON stores them), pairs kept', () => {
    const value = JSON.parse('{"data":{"q":"a\\ud800b","list":["\\udc00x","😀"]},"ok":"\\ud83d\\ude00"}');
    expect(findInputProblem(value)).toBeNull();
    expect(value).toEqual({ data: { q: 'a\ufffdb', list: ['\ufffdx', '😀'] }, ok: '😀' });
  });

  it('handles 100,000 levels without overflowing the stack', () => {
    expect(findInputProblem(nested(100_000))?.kind).toBe('depth');
  });

  it('walks arrays by index: no key list built for them (a 20 M-element array took seconds)', () => {
    let keyLists = 0;
    const counted = <T extends object>(target: T) =>
      new Proxy(target, {
        ownKeys(inner) {
          keyLists += 1;
          return Reflect.ownKeys(inner);
        },
      });
    const list = counted(Array.from({ length: 1000 }, (_, i) => (i === 999 ? { deep: [counted(['x\u0000'])] } : i)));
    expect(findInputProblem({ list })).toEqual({ kind: 'nul', path: 'list.999.deep.0.0' });
    expect(keyLists).toBe(0);
  });

  it('refuses with a 400 naming the field', () => {
    expect(() => assertSafeInput({ chatConfig: nested(1000) })).toThrow(/Invalid field 'chatConfig\.a.*': nested deeper than 32 levels/);
    expect(() => assertSafeInput('x\u0000', 'file')).toThrow(/Invalid field 'file': must not contain the NUL/);
    expect(() => assertSafeInput(JSON.parse('{"metadata":{"n":1e400}}'))).toThrow("Invalid field 'metadata.n': must be a finite number");
    expect(() => assertSafeInput(JSON.parse('{"k\\ud800":1}'), 'body')).toThrow(/^Invalid field 'body': must be well-formed Unicode text/);
    expect(() => assertSafeInput(JSON.parse('"\\udc00"'), 'data')).toThrow(/^Invalid field 'data': must be well-formed Unicode text/);
  });
});
