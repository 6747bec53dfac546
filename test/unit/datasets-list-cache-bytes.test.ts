import { describe, expect, it } from 'vitest';
import { createDatasetListReadModel } from '../../src/platform/datasets/datasets/dataset-list.read-model.js';
import type { DatasetRecord } from '../../src/platform/datasets/datasets/dataset.repo.js';
import type { VersionStamps } from '../../src/infra/version-stamps.js';

/**
 * The dataset lists keep every dataset document of a team. Folders count toward no plan limit,
 * so by team count alone one member could make every replica hold whatever they create: the
 * views are weighed, and none kept past its share or past the total.
 */
describe('dataset list read model: byte budget', () => {
  const stamps = { read: async () => 'initial', bump: async () => undefined, forget: () => undefined } as unknown as VersionStamps;
  const doc = (id: string, intro: string) => ({ _id: id, parentId: null, teamId: 'T', tmbId: 'M', name: id, intro, type: 'folder' }) as unknown as DatasetRecord;

  function model(sizes: Record<string, number>, fill = 'x') {
    const loads: string[] = [];
    const lists = createDatasetListReadModel({
      stamps,
      load: async (teamId) => {
        loads.push(teamId);
        return { datasets: [doc(`${teamId}-folder`, fill.repeat(sizes[teamId] ?? 0))], rows: new Map() };
      },
      toResource: (dataset) => ({ id: dataset._id, parentId: null, ownerTmbId: 'M', defaultPermission: 0, inheritPermission: false }) as never,
      bytes: { total: 10_000, perTeam: 4_000 },
    });
    return { lists, loads };
  }

  it('reads a team over its share at every request, and lets the least recent teams go past the total', async () => {
    const { lists, loads } = model({ big: 5_000, a: 3_000, b: 3_000, c: 3_000 });
    expect((await lists.team('big')).entries[0]?.doc.intro).toHaveLength(5_000);
    await lists.team('big');
    expect(loads).toEqual(['big', 'big']);
    // Each team weighs ~3.5 KB: two fit in 10 KB; a third drops the least recently used.
    for (const team of ['a', 'b', 'a', 'c', 'a', 'b']) await lists.team(team);
    expect(loads.slice(2)).toEqual(['a', 'b', 'c', 'b']);
    expect(lists.size()).toBe(2);
    expect(lists.weight()).toBeGreaterThan(6_000);
    expect(lists.weight()).toBeLessThanOrEqual(10_000);
  });

  it('weighs CJK text as the two-byte strings it is kept in', async () => {
    const { lists, loads } = model({ wide: 2_500, narrow: 1_000 }, '汉');
    // 2,500 characters take 5,000 bytes: over the share, so read again; 1,000 take 2,000: kept.
    for (const team of ['wide', 'wide', 'narrow', 'narrow']) await lists.team(team);
    expect([lists.size(), loads]).toEqual([1, ['wide', 'wide', 'narrow']]);
  });
});
