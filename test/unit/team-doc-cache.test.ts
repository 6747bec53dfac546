import { describe, expect, it } from 'vitest';
import { createTeamDocCache } from '../../src/infra/team-doc-cache.js';
import type { VersionStamps } from '../../src/infra/version-stamps.js';

interface Doc {
  id: string;
  teamId: string;
  name: string;
}

/** Stamps held in a map (the database's), a store of documents, and a count of loads. */
function setUp(options: { maxAgeMs?: number } = {}) {
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
});
