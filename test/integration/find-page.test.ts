/**
 * findPage (infra/find-page.ts) counts only when the page cannot tell the total: on every kind
 * of page the total is the number of matches, with or without the count command.
 */
import type { Db } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findPage } from '../../src/infra/find-page.js';
import { openTestDatabase } from '../helpers/real-process.js';

let database: { db: Db; close(): Promise<void> };
const MATCHES = 7;

beforeAll(async () => {
  database = await openTestDatabase();
  const docs = Array.from({ length: MATCHES + 3 }, (_, n) => ({ n, kind: n < MATCHES ? 'match' : 'other' }));
  await database.db.collection('paged').insertMany(docs);
});
afterAll(async () => {
  await database?.close();
});

describe('findPage', () => {
  const page = (skip: number, limit: number) => findPage(database.db.collection<{ n: number; kind: string }>('paged'), { kind: 'match' }, { n: 1 }, { skip, limit });

  it('gives the total of the matches on a full, a short, an exact last, an empty and an unlimited page', async () => {
    for (const [skip, limit, found] of [
      [0, 3, 3],
      [3, 3, 3],
      [6, 3, 1],
      [4, 3, 3],
      [7, 3, 0],
      [20, 3, 0],
      [0, 0, MATCHES],
      [0, 50, MATCHES],
    ] as const) {
      const { docs, total } = await page(skip, limit);
      expect(docs.length, `skip ${skip} limit ${limit}`).toBe(found);
      expect(total, `skip ${skip} limit ${limit}`).toBe(MATCHES);
    }
  });

  it('keeps the order and the window', async () => {
    expect((await page(2, 3)).docs.map((doc) => doc.n)).toEqual([2, 3, 4]);
  });

  it('without paging, the page is every match', async () => {
    const all = await findPage(database.db.collection('paged'), { kind: 'other' }, { n: -1 });
    expect(all.docs.map((doc) => doc.n)).toEqual([9, 8, 7]);
    expect(all.total).toBe(3);
  });
});
