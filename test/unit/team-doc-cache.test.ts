import { describe, expect, it } from 'vitest';
import { createTeamDocCache, type TeamDocBytes } from '../../src/infra/team-doc-cache.js';
import type { VersionStamps } from '../../src/infra/version-stamps.js';

interface Doc {
  id: string;
  teamId: string;
  name: string;
}

/** Stamps held in a map (the database's), a store of documents, and a count of loads. */
function setUp(options: { maxAgeMs?: number; bytes?: TeamDocBytes<Doc> } = {}) {
  const values = new Map<string, string>();
  const stamps = { read: async (key: string) => values.get(key) ?? 'initial' } as unknown as VersionStamps;
  const store = new Map<string, Doc>();
  let loads = 0;
  let clock = 0;
  const cache = createTeamDocCache<Doc>({
    stamps,
    stampKeys: (teamId) => [`a:${teamId}`, `b:${teamId}`],
    load: async (_teamId, id) => {
      loads += 1;
      const doc = store.get(id);
      return doc ? { ...doc } : null;
    },
    teamOf: (doc) => doc.teamId,
    maxAgeMs: options.maxAgeMs,
    bytes: options.bytes,
    now: () => clock,
  });
  return { cache, store, bump: (key: string) => values.set(key, String(Math.random())), loads: () => loads, advance: (ms: number) => (clock += ms) };
}

describe('team document cache', () => {
  it('keeps a found document of the team, frozen, until one of the team stamps moves', async () => {
    const t = setUp();
    t.store.set('d1', { id: 'd1', teamId: 'T', name: 'one' });
    const first = await t.cache.find('T', 'd1');
    expect(Object.isFrozen(first)).toBe(true);
    expect(await t.cache.find('T', 'd1')).toBe(first);
    expect(t.loads()).toBe(1);
    t.store.set('d1', { id: 'd1', teamId: 'T', name: 'renamed' });
    t.bump('b:T');
    expect((await t.cache.find('T', 'd1'))?.name).toBe('renamed');
    expect(t.loads()).toBe(2);
    // Another team's stamp leaves this team's documents alone.
    t.bump('a:U');
    await t.cache.find('T', 'd1');
    expect(t.loads()).toBe(2);
  });

  it("never keeps another team's document, nor an unknown id", async () => {
    const t = setUp();
    t.store.set('d2', { id: 'd2', teamId: 'U', name: 'theirs' });
    expect((await t.cache.find('T', 'd2'))?.teamId).toBe('U');
    expect((await t.cache.find('T', 'd2'))?.teamId).toBe('U');
    expect(await t.cache.find('T', 'missing')).toBeNull();
    expect(await t.cache.find('T', 'missing')).toBeNull();
    expect(t.loads()).toBe(4);
  });

  it('reads again past the safety net even when no stamp moved', async () => {
    const t = setUp({ maxAgeMs: 1000 });
    t.store.set('d3', { id: 'd3', teamId: 'T', name: 'old' });
    await t.cache.find('T', 'd3');
    t.store.set('d3', { id: 'd3', teamId: 'T', name: 'changed without a bump' });
    t.advance(999);
    expect((await t.cache.find('T', 'd3'))?.name).toBe('old');
    t.advance(1);
    expect((await t.cache.find('T', 'd3'))?.name).toBe('changed without a bump');
  });

  describe('with byte bounds (a document weighs its name length)', () => {
    const bytes = { weigh: (doc: Doc) => doc.name.length, total: 10, perTeam: 6, perDoc: 4 };
    const put = (t: ReturnType<typeof setUp>, id: string, teamId: string, name: string) => t.store.set(id, { id, teamId, name });

    it('reads a document over perDoc from the database each time, keeping the rest', async () => {
      const t = setUp({ bytes });
      put(t, 'small', 'T', 'ab');
      put(t, 'big', 'T', 'abcde');
      await t.cache.find('T', 'small');
      expect((await t.cache.find('T', 'big'))?.name).toBe('abcde');
      expect((await t.cache.find('T', 'big'))?.name).toBe('abcde');
      await t.cache.find('T', 'small');
      expect([t.loads(), t.cache.weight()]).toEqual([3, 2]);
    });

    it("drops a team's least recent document past perTeam, and the least recent team past total", async () => {
      const t = setUp({ bytes });
      for (const [id, team] of [['t1', 'T'], ['t2', 'T'], ['t3', 'T'], ['u1', 'U'], ['u2', 'U']] as const) put(t, id, team, 'abc');
      for (const id of ['t1', 't2', 't3']) await t.cache.find('T', id);
      // T holds 6 of its 9: t1 went.
      expect(t.cache.weight()).toBe(6);
      await t.cache.find('T', 't2');
      expect(t.loads()).toBe(3);
      await t.cache.find('U', 'u1');
      await t.cache.find('U', 'u2');
      // 12 > 10: T, the least recent team, went whole.
      expect(t.cache.weight()).toBe(6);
      await t.cache.find('T', 't2');
      expect(t.loads()).toBe(6);
      expect(t.cache.weight()).toBeLessThanOrEqual(10);
    });

    it('subtracts what a team held when its stamps move', async () => {
      const t = setUp({ bytes });
      put(t, 'd1', 'T', 'abc');
      await t.cache.find('T', 'd1');
      expect(t.cache.weight()).toBe(3);
      t.bump('a:T');
      t.store.delete('d1');
      expect(await t.cache.find('T', 'd1')).toBeNull();
      expect(t.cache.weight()).toBe(0);
    });
  });
});
