import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { collectionStampKey } from '../../src/platform/datasets/collections/collection-cache.js';
import { datasetListStampKey } from '../../src/platform/datasets/datasets/dataset-list.read-model.js';
import { CATCH_UP_MAX_AGE_MS, searchStampKey } from '../../src/platform/datasets/search/dataset-index.js';
import { isCredentialEpochKey } from '../../src/platform/identity/credential-epoch.js';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring, type RecordedCommand } from '../helpers/command-counter.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * The database commands of one warm searchTest (the search service is the workflow's search node's
 * too), each named: FerretDB scans a table per command. Past every lease a warm search reads the
 * team's dataset stamp (authorisation), the dataset's search stamp, and writes its usage record;
 * once a minute it reads the index's change log instead of that stamp, and the team's collection
 * stamp instead of the collections. Authentication's credential epoch is left out (its own tests
 * count it), but may be read at most once.
 */

/** The search stamp's lease (context.ts: SEARCH_STAMP_LEASE_MS) and a margin: past it, every stamp is read again. */
const PAST_LEASES_MS = 1100;

let t: TestApp;
let api: Client;
let teamId: string;
let datasetId: string;
const collections: string[] = [];

beforeAll(async () => {
  t = await buildTestApp();
  teamId = (await createUser(t, { username: 'counted', password: 'password-c1' })).teamId;
  api = client(t, await login(t, 'counted', 'password-c1'));
  datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Counted' }));
  for (const name of ['one', 'two', 'three']) {
    const id = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name, type: 'virtual' }));
    collections.push(id);
    await api.ok(api.post('/core/dataset/data/insertData', { collectionId: id, q: `Lighthouse notes of collection ${name}.` }));
  }
});

afterAll(async () => {
  await t?.close();
});

interface Found {
  list: { q: string; sourceName: string }[];
}
const search = (searchMode = 'mixedRecall') => api.ok<Found>(api.post('/core/dataset/searchTest', { datasetId, text: 'lighthouse notes', searchMode }));

/** A command as the report lists it: stamps by what they stamp. */
function named(command: RecordedCommand): string {
  if (command.collection !== 'version_stamps') return `${command.name} ${command.collection}`;
  const key = command.key ?? '';
  const stamp =
    key === datasetListStampKey(teamId) ? 'team datasets' : key === searchStampKey(datasetId) ? 'dataset search index' : key === collectionStampKey(teamId) ? 'team collections' : key;
  return `${command.name} stamp ${stamp}`;
}

/** Authentication's: the credential epoch's links, and what a session resolves again once its cache entry aged. */
const isAuthentication = (command: RecordedCommand) =>
  command.collection === 'version_stamps' ? isCredentialEpochKey(command.key) || command.key === undefined : !/^(dataset_|usages$)/.test(command.collection);

/** A snapshot of the index written in the background (index-compaction.ts) is not the request's work. */
const isSnapshotWrite = (command: RecordedCommand) => command.collection.startsWith('dataset_index_') && command.name !== 'find';

/**
 * The commands of one searchTest past every lease, the credential epoch left out (at most one
 * read). `clockMoved`: the wall clock was moved on, so authentication reads what its caches hold
 * again (their age runs on it): only the commands of the datasets module are kept.
 */
async function searchCost(clockMoved = false): Promise<{ commands: string[]; found: Found }> {
  await sleep(PAST_LEASES_MS);
  await t.app.datasets.ctx.repos.trainings.countsSettled();
  let found: Found = { list: [] };
  const recorded = await commandsDuring(t.app, async () => {
    found = await search();
  });
  const aside = recorded.filter(
    (command) => isSnapshotWrite(command) || (clockMoved ? isAuthentication(command) : command.collection === 'version_stamps' && isCredentialEpochKey(command.key)),
  );
  if (!clockMoved) expect(aside.length, JSON.stringify(aside)).toBeLessThanOrEqual(1);
  return { commands: recorded.filter((command) => !aside.includes(command)).map(named).sort(), found };
}

const USAGE = 'insert usages';

describe('database commands of one warm searchTest', () => {
  it('past every lease: the team and search stamps, and the usage record', async () => {
    await search();
    await search('embedding');
    const { commands, found } = await searchCost();
    expect(found.list.map((item) => item.sourceName).sort()).toEqual(['one', 'three', 'two']);
    expect(commands).toEqual(['find stamp dataset search index', 'find stamp team datasets', USAGE]);
  });

  it("the workflow's search node (the same service, its datasets from the team's read model): the team and search stamps", async () => {
    const node = async () => {
      const found = await t.app.datasets.findInTeam(teamId, [datasetId]);
      return t.app.datasets.search.searchPriced({ teamId, datasetIds: found.map((doc) => doc._id), vectorModel: found[0]!.vectorModel, queries: ['lighthouse notes'], limit: 1500, similarity: 0, searchMode: 'mixedRecall', usingReRank: false });
    };
    const before = await node();
    await sleep(PAST_LEASES_MS);
    let after: Awaited<ReturnType<typeof node>> | undefined;
    const recorded = await commandsDuring(t.app, async () => {
      after = await node();
    });
    const commands = recorded.filter((command) => !isSnapshotWrite(command)).map(named).sort();
    expect(after?.list).toEqual(before.list);
    expect(commands).toEqual(['find stamp dataset search index', 'find stamp team datasets']);
  });

  it('after its own data write: the log too (nothing new there), not the meta', async () => {
    await api.ok(api.post('/core/dataset/data/insertData', { collectionId: collections[0], q: 'Another lighthouse note.' }));
    const { commands, found } = await searchCost();
    expect(found.list.map((item) => item.q)).toContain('Another lighthouse note.');
    expect(commands).toEqual(['find dataset_index_changes', 'find stamp dataset search index', 'find stamp team datasets', USAGE]);
    // The next one is warm again.
    expect((await searchCost()).commands).toEqual(['find stamp dataset search index', 'find stamp team datasets', USAGE]);
  });

  it('after a collection rename: the log, the team collection stamp and the collections, once', async () => {
    await api.ok(api.post('/core/dataset/collection/update', { id: collections[1], name: 'renamed' }));
    const { commands, found } = await searchCost();
    expect(found.list.map((item) => item.sourceName).sort()).toEqual(['one', 'one', 'renamed', 'three']);
    expect(commands).toEqual(['find dataset_collections', 'find dataset_index_changes', 'find stamp dataset search index', 'find stamp team collections', 'find stamp team datasets', USAGE]);
    expect((await searchCost()).commands).toEqual(['find stamp dataset search index', 'find stamp team datasets', USAGE]);
  });

  // Last: the wall clock is moved on here, and an earlier clock after it reads as one that went back.
  it('once a minute: the log instead of the search stamp, and the collection stamp instead of the collections', async () => {
    await search();
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + CATCH_UP_MAX_AGE_MS);
      const { commands, found } = await searchCost(true);
      expect(found.list.map((item) => item.sourceName)).toContain('one');
      expect(commands).toEqual(['find dataset_index_changes', 'find stamp team collections', 'find stamp team datasets', USAGE]);
      // Then warm again, nothing read for the index but its stamp.
      expect((await searchCost(true)).commands).toEqual(['find stamp dataset search index', 'find stamp team datasets', USAGE]);
    } finally {
      vi.useRealTimers();
    }
  });
});
