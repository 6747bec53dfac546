import { ObjectId } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { newId, oid, plain, plainOrNull } from '../../src/infra/plain-record.js';

const HEX = '65a1b2c3d4e5f60718293a4b';

describe('plain records at the repository boundary', () => {
  it('turns every ObjectId into its hex string and keeps the rest, in key order', () => {
    const at = new Date(0);
    const bytes = Buffer.from('x');
    const doc = { _id: new ObjectId(HEX), name: 'n', lastLoginTmbId: new ObjectId(HEX), nested: { ids: [new ObjectId(HEX)], at, bytes, none: null } };
    const record = plain(doc);
    expect(record).toEqual({ _id: HEX, name: 'n', lastLoginTmbId: HEX, nested: { ids: [HEX], at, bytes, none: null } });
    expect(Object.keys(record)).toEqual(['_id', 'name', 'lastLoginTmbId', 'nested']);
    expect(record.nested.at).toBe(at);
  });

  it('keeps a missed look-up null', () => {
    expect(plainOrNull(null)).toBeNull();
    expect(plainOrNull({ _id: new ObjectId(HEX) })).toEqual({ _id: HEX });
  });

  it('parses hex ids (either case) to the same ObjectId, and makes fresh ones', () => {
    expect(oid(HEX.toUpperCase()).equals(oid(HEX))).toBe(true);
    expect(newId()).toMatch(/^[0-9a-f]{24}$/);
    expect(newId()).not.toBe(newId());
  });
});
