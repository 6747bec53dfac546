import { ObjectId } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compileResponseSerializer, serializationSchema } from '../../src/infra/response-serializer.js';
import { zodJsonSchema } from '../../src/infra/zod-json-schema.js';

const item = z.object({
  id: z.string(),
  parentId: z.string().nullable(),
  count: z.number().int(),
  ratio: z.number(),
  done: z.boolean().optional(),
  when: z.date(),
  kind: z.enum(['a', 'b']),
  label: z.literal('Bearer'),
  fallback: z.number().default(3),
  either: z.union([z.string(), z.number()]),
  open: z.record(z.string(), z.unknown()).optional(),
  loose: z.looseObject({ known: z.string() }),
  tags: z.array(z.string()),
  anything: z.unknown(),
});
const list = z.object({ items: z.array(item), total: z.number().int() });
const write = compileResponseSerializer(list);

const base = {
  id: 'abc',
  parentId: null,
  count: 3,
  ratio: 0.25,
  done: true,
  when: new Date(Date.UTC(2024, 1, 29, 23, 59, 58, 7)),
  kind: 'a',
  label: 'Bearer',
  fallback: 1,
  either: 'x',
  open: { 'a.b': { deep: [1, null, 'x'] }, $c: true },
  loose: { known: 'k', extra: { nested: 'kept' }, more: [1, 2] },
  tags: ['t1', 't2'],
  anything: { any: ['thing', 1, null] },
};

const TEXTS = [
  '',
  'plain',
  'quote " backslash \\ slash /',
  'controls \n\r\t\b\f \u0001 \u001f \u007f',
  'emoji 😀 CJK 你好 RTL שלום',
  'lone \ud800 and \udfff surrogates',
  '\u2028\u2029 separators',
  `${'long '.repeat(20)}"${'x'.repeat(6000)}"\\`,
  'x'.repeat(5001),
];

describe('compiled response serialiser', () => {
  it('writes exactly what JSON.stringify writes for conforming values', () => {
    const value = { items: [base, { ...base, id: 'second', parentId: 'p', done: false }], total: 2 };
    expect(write(value)).toBe(JSON.stringify(value));
  });

  it('escapes every kind of text as JSON.stringify does', () => {
    for (const text of TEXTS) {
      const value = { items: [{ ...base, id: text, tags: [text], open: { [text]: text }, loose: { known: text, [text]: text } }], total: 1 };
      expect(write(value), JSON.stringify(text)).toBe(JSON.stringify(value));
    }
  });

  it('leaves absent fields absent (no required check, no default filled in) and writes nulls as null', () => {
    const sparse = { items: [{ id: 'only', count: null, when: null, open: undefined, loose: null, tags: [null, 'x'] }], total: 1 };
    expect(write(sparse)).toBe(JSON.stringify(sparse));
    expect(JSON.parse(write(sparse)).items[0]).not.toHaveProperty('fallback');
  });

  it('writes non-integer numbers in an integer field, infinities and large numbers as JSON.stringify', () => {
    const odd = { items: [{ ...base, count: 2.5, ratio: Number.POSITIVE_INFINITY }], total: 2 ** 60 };
    expect(write(odd)).toBe(JSON.stringify(odd));
  });

  it('writes union fields, dates given as text and values with toJSON (ObjectId) as JSON.stringify', () => {
    const id = new ObjectId();
    const mixed = { items: [{ ...base, either: 42, when: '2024-01-01T00:00:00Z', id }, { ...base, either: { not: 'declared' } }], total: 2 };
    expect(write(mixed)).toBe(JSON.stringify(mixed));
  });

  it('keeps the undeclared fields of open objects, after the declared ones', () => {
    const reordered = { items: [{ ...base, loose: { extra: 1, known: 'k' } }], total: 1 };
    expect(JSON.parse(write(reordered))).toEqual(JSON.parse(JSON.stringify(reordered)));
    expect(write(reordered)).toContain('"loose":{"known":"k","extra":1}');
  });

  it('drops the undeclared fields of closed objects (a response schema must declare every field)', () => {
    const extra = { items: [], total: 0, secret: 'not declared' };
    expect(JSON.parse(write(extra))).toEqual({ items: [], total: 0 });
  });
});

describe('serialisation schema', () => {
  it('has no required list, default, enum or integer type; every typed value may be null', () => {
    const schema = serializationSchema(zodJsonSchema(list, 'output', 'draft-7'));
    const text = JSON.stringify(schema);
    for (const keyword of ['"required"', '"default"', '"enum"', '"const"', '"integer"', '"anyOf"', '"minimum"']) expect(text).not.toContain(keyword);
    const properties = (schema.properties as { items: { items: { properties: Record<string, Record<string, unknown>> } } }).items.items.properties;
    expect(properties.parentId).toEqual({ type: 'string', nullable: true });
    expect(properties.when).toEqual({ type: 'string', format: 'date-time', nullable: true });
    expect(properties.either).toEqual({});
    expect(properties.anything).toEqual({});
    expect(properties.open).toMatchObject({ type: 'object', additionalProperties: true });
    expect(properties.loose).toMatchObject({ type: 'object', properties: { known: { type: 'string', nullable: true } }, additionalProperties: true });
  });
});
