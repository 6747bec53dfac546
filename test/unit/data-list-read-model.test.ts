import { describe, expect, it } from 'vitest';
import type { VersionStamps } from '../../src/infra/version-stamps.js';
import type { RecordedChange } from '../../src/platform/datasets/data/data-changes.repo.js';
import { createDataListReadModel, DATA_LIST_MAX_AGE_MS, type ListedData, selectDataPage, TOO_LARGE_RETRY_MS } from '../../src/platform/datasets/data/data-list.read-model.js';

const row = (id: string, q: string, chunkIndex = 0, updatedAt = 0, a = ''): ListedData => ({ _id: id, q, a, chunkIndex, updatedAt });

/** Stamps held in a map (the database's), collections of rows by id, their recorded changes, and the loads made. */
function setUp(options: { maxItems: number; maxChars: number }) {
  const values = new Map<string, string>();
  const stamps = { read: async (key: string) => values.get(key) ?? 'initial' } as unknown as VersionStamps;
  const collections = new Map<string, ListedData[]>();
  const changes = new Map<string, RecordedChange[]>();
  const loads: { collectionId: string; limit: number }[] = [];
  const readsByIds: string[][] = [];
  let clock = 0;
  let recorded = 0;
  const model = createDataListReadModel({
    stamps,
    load: async ({ collectionId }, limit) => {
      loads.push({ collectionId, limit });
      return (collections.get(collectionId) ?? []).slice(0, limit).map((item) => ({ ...item }));
    },
    loadByIds: async ({ collectionId }, ids) => {
      readsByIds.push([...ids].sort());
      return (collections.get(collectionId) ?? []).filter((item) => ids.includes(item._id)).map((item) => ({ ...item }));
    },
    changes: async ({ collectionId }) => [...(changes.get(collectionId) ?? [])],
    ...options,
    now: () => clock,
  });
  const page = (collectionId: string) => model.page('T', { _id: collectionId, datasetId: 'D' }, { skip: 0, limit: 10 });
  const bump = (collectionId: string) => values.set(`dataset-data:${collectionId}`, String(Math.random()));
  /** A data write as the repository does it: the rows change, the change is recorded, then the stamp moves. */
  const write = (collectionId: string, rows: ListedData[], ids: string[] | null) => {
    collections.set(collectionId, rows);
    changes.set(collectionId, [...(changes.get(collectionId) ?? []), { id: `change-${++recorded}`, ids }]);
    bump(collectionId);
  };
  return { model, collections, loads, readsByIds, page, bump, write, advance: (ms: number) => (clock += ms) };
}

describe('data list read model', () => {
  it('sorts by chunkIndex, then newest update, then id, and pages and searches as the database query does', async () => {
    const t = setUp({ maxItems: 10, maxChars: 1_000_000 });
    t.collections.set('C', [row('b', 'Beta', 1, 5), row('a', 'alpha', 1, 5), row('c', 'gamma', 0, 1), row('d', 'x.y', 1, 9, 'ALPHA answer')]);
    const sorted = (await t.page('C'))!.items;
    expect(sorted.map((item) => item._id)).toEqual(['c', 'd', 'a', 'b']);
    expect(selectDataPage(sorted, { searchText: 'Alpha', skip: 0, limit: 10 })).toMatchObject({ total: 2, items: [{ _id: 'd' }, { _id: 'a' }] });
    // Matched as typed (the reference does not trim): the spaces are part of the text.
    expect(selectDataPage(sorted, { searchText: 'ALPHA ', skip: 0, limit: 10 })).toMatchObject({ total: 1, items: [{ _id: 'd' }] });
    expect(selectDataPage(sorted, { searchText: '   ', skip: 0, limit: 10 }).total).toBe(4);
    expect(selectDataPage(sorted, { searchText: 'x.y', skip: 0, limit: 10 }).total).toBe(1);
    expect(selectDataPage(sorted, { searchText: 'x*', skip: 0, limit: 10 }).total).toBe(0);
    expect(selectDataPage(sorted, { skip: 1, limit: 2 })).toMatchObject({ total: 4, items: [{ _id: 'd' }, { _id: 'a' }] });
    expect(selectDataPage(sorted, { skip: 1, limit: 0 }).items).toHaveLength(3);
  });

  it('loads again when the stamp moves, and not before', async () => {
    const t = setUp({ maxItems: 10, maxChars: 1_000_000 });
    t.collections.set('C', [row('a', 'one')]);
    await t.page('C');
    t.collections.set('C', [row('a', 'one'), row('b', 'two')]);
    expect((await t.page('C'))?.total).toBe(1);
    t.bump('C');
    expect((await t.page('C'))?.total).toBe(2);
    expect(t.loads).toHaveLength(2);
  });

  it('keeps a view per team and dataset: the same collection id asked by another team is loaded for that team', async () => {
    const owners: string[] = [];
    const model = createDataListReadModel({
      stamps: { read: async () => 'initial' } as unknown as VersionStamps,
      load: async (owner) => {
        owners.push(`${owner.teamId} ${owner.datasetId} ${owner.collectionId}`);
        return [row(owner.teamId, `of ${owner.teamId}`)];
      },
      loadByIds: async () => [],
      changes: async () => [],
      maxItems: 10,
      maxChars: 1_000_000,
    });
    const ask = (teamId: string, datasetId: string) => model.page(teamId, { _id: 'C', datasetId }, { skip: 0, limit: 10 });
    expect((await ask('T1', 'D'))?.items[0]?.q).toBe('of T1');
    expect((await ask('T2', 'D'))?.items[0]?.q).toBe('of T2');
    expect((await ask('T1', 'D2'))?.items[0]?.q).toBe('of T1');
    expect((await ask('T1', 'D'))?.items[0]?.q).toBe('of T1');
    expect(owners).toEqual(['T1 D C', 'T2 D C', 'T1 D2 C']);
  });

  it('after a write naming a few items, reads only those again and keeps the rest', async () => {
    const t = setUp({ maxItems: 10, maxChars: 1_000_000 });
    t.collections.set('C', [row('a', 'one', 0), row('b', 'two', 1), row('c', 'three', 2)]);
    expect((await t.page('C'))?.total).toBe(3);
    // b edited (moves after its chunk neighbours by time), c deleted, d inserted: one change.
    t.write('C', [row('a', 'one', 0), row('b', 'two, edited', 1, 9), row('d', 'four', 0, 5)], ['b', 'c', 'd']);
    const page = await t.page('C');
    expect(page?.items.map((item) => [item._id, item.q])).toEqual([
      ['d', 'four'],
      ['a', 'one'],
      ['b', 'two, edited'],
    ]);
    expect(t.loads).toHaveLength(1);
    expect(t.readsByIds).toEqual([['b', 'c', 'd']]);
    // Two writes from other processes since: both taken in, once each.
    t.write('C', [row('a', 'one', 0), row('b', 'two, edited', 1, 9)], ['d']);
    t.write('C', [row('a', 'one, again', 0, 7), row('b', 'two, edited', 1, 9)], ['a']);
    expect((await t.page('C'))?.items.map((item) => item.q)).toEqual(['one, again', 'two, edited']);
    expect(t.readsByIds.at(-1)).toEqual(['a', 'd']);
    await t.page('C');
    expect(t.loads).toHaveLength(1);
    expect(t.readsByIds).toHaveLength(2);
  });

  it('reloads in full when a change names no items or more than a few, or the stamp moved with nothing recorded', async () => {
    const t = setUp({ maxItems: 100, maxChars: 1_000_000 });
    const rows = Array.from({ length: 20 }, (_, i) => row(`r${i}`, `row ${i}`, i));
    t.collections.set('C', rows);
    await t.page('C');
    t.write('C', rows.slice(1), null);
    expect((await t.page('C'))?.total).toBe(19);
    expect(t.loads).toHaveLength(2);
    t.write(
      'C',
      rows.slice(2),
      rows.slice(0, 17).map((item) => item._id),
    );
    expect((await t.page('C'))?.total).toBe(18);
    expect(t.loads).toHaveLength(3);
    // A write whose record failed still moved the stamp.
    t.collections.set('C', rows.slice(3));
    t.bump('C');
    expect((await t.page('C'))?.total).toBe(17);
    expect(t.loads).toHaveLength(4);
    expect(t.readsByIds).toHaveLength(0);
  });

  it('loads a refreshed view in full again at its age limit', async () => {
    const t = setUp({ maxItems: 10, maxChars: 1_000_000 });
    t.collections.set('C', [row('a', 'one')]);
    await t.page('C');
    t.advance(DATA_LIST_MAX_AGE_MS - 10);
    t.write('C', [row('a', 'one'), row('b', 'two')], ['b']);
    expect((await t.page('C'))?.total).toBe(2);
    expect(t.loads).toHaveLength(1);
    // A change whose stamp bump was lost: only the age limit brings it.
    t.collections.set('C', [row('a', 'one'), row('b', 'two'), row('c', 'three')]);
    expect((await t.page('C'))?.total).toBe(2);
    t.advance(20);
    expect((await t.page('C'))?.total).toBe(3);
    expect(t.loads).toHaveLength(2);
  });

  it('leaves a collection over the item limit to the database, and tries again only after a while', async () => {
    const t = setUp({ maxItems: 2, maxChars: 1_000_000 });
    t.collections.set('C', [row('a', 'one'), row('b', 'two'), row('c', 'three')]);
    expect(await t.page('C')).toBeNull();
    expect(t.loads).toEqual([{ collectionId: 'C', limit: 3 }]);
    // Writes move the stamp; the collection is not read again meanwhile.
    t.bump('C');
    expect(await t.page('C')).toBeNull();
    expect(t.loads).toHaveLength(1);
    t.collections.set('C', [row('a', 'one')]);
    t.advance(TOO_LARGE_RETRY_MS + 1);
    expect((await t.page('C'))?.total).toBe(1);
    expect(t.loads).toHaveLength(2);
  });

  it('keeps at most its character budget: a collection over a quarter of it is not kept, the least recent ones go first', async () => {
    // 64 characters of overhead per row: 100-character rows weigh 164.
    const t = setUp({ maxItems: 100, maxChars: 4 * 400 });
    const heavy = (id: string) => row(id, 'q'.repeat(50), 0, 0, 'a'.repeat(50));
    t.collections.set('big', [heavy('1'), heavy('2'), heavy('3')]);
    expect(await t.page('big')).toBeNull();
    for (const id of ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J']) t.collections.set(id, [heavy(`${id}1`), heavy(`${id}2`)]);
    // Each weighs 328: four fit in 1,600 characters, a fifth drops the least recent.
    for (const id of ['A', 'B', 'C', 'D']) await t.page(id);
    await t.page('A');
    await t.page('E');
    const loads = t.loads.length;
    for (const id of ['A', 'C', 'D', 'E']) await t.page(id);
    expect(t.loads.length, 'A, C, D and E kept').toBe(loads);
    await t.page('B');
    expect(t.loads.length, 'B was dropped').toBe(loads + 1);
  });

  it('keeps nothing with a limit of 0', async () => {
    const t = setUp({ maxItems: 0, maxChars: 1_000_000 });
    t.collections.set('C', [row('a', 'one')]);
    expect(await t.page('C')).toBeNull();
    expect(t.loads).toHaveLength(0);
  });
});
