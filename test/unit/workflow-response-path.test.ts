import { describe, expect, it } from 'vitest';
import { valueAtPath } from '../../src/domain/workflow/response-path.js';

/** Flattening, the earlier way: every value under its whole path (what valueAtPath must agree with). */
function flatten(value: unknown, prefix = '', out: Record<string, unknown> = {}): Record<string, unknown> {
  if (prefix) out[prefix] = value;
  if (Array.isArray(value)) for (const [index, item] of value.entries()) flatten(item, `${prefix}[${index}]`, out);
  else if (typeof value === 'object' && value !== null) for (const [key, item] of Object.entries(value)) flatten(item, prefix ? `${prefix}.${key}` : key, out);
  return out;
}

describe('valueAtPath (HTTP node outputs)', () => {
  const response = {
    data: { user: { name: 'Ada', tags: ['x', { id: 7 }] }, 'dotted.key': { v: 1 } },
    list: [{ c: 1 }, [2, 3]],
    '0': 'zero',
    empty: null,
  };

  it('finds what the flattened response names, intermediate values and keys with dots included', () => {
    for (const [path, value] of Object.entries(flatten(response))) expect(valueAtPath(response, path), path).toEqual({ found: true, value });
  });

  it('finds nothing the flattened response does not name, prototype members included', () => {
    for (const path of ['', 'data.user.age', 'list[2]', 'list.0', 'data.user.tags[01]', 'list[1].0', 'data.dotted', 'constructor', 'data.toString', 'empty.x', 'lis', 'data.user.name.length']) {
      expect(valueAtPath(response, path), path).toEqual({ found: false });
    }
    expect(valueAtPath([1, 2], '[1]')).toEqual({ found: true, value: 2 });
    expect(valueAtPath('text', 'a')).toEqual({ found: false });
  });

  // Flattening stored each key's whole path: a 300 KB answer of long keys 300 deep made 45 M
  // characters of keys, a 5 MB one (the outbound cap) more than the heap.
  it('reads a deep answer of long keys without building its paths', () => {
    const key = 'k'.repeat(1000);
    let text = '1';
    for (let i = 0; i < 2000; i++) text = `{"${key}":${text}}`;
    const parsed = JSON.parse(text);
    expect(valueAtPath(parsed, Array.from({ length: 2000 }, () => key).join('.'))).toEqual({ found: true, value: 1 });
    expect(valueAtPath(parsed, `${key}.missing`)).toEqual({ found: false });
  });
});
