import { type CommandStartedEvent, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccountsRepo } from '../../src/cluster/accounts/accounts.repo.js';
import { CLUSTER_INDEXES, RETIRED_CLUSTER_INDEXES } from '../../src/cluster/cluster-services.js';
import { createMongo, dropRetiredIndexes, ensureIndexes, type IndexDeclaration, indexName, type Mongo } from '../../src/infra/mongo.js';
import { APP_VERSION_INDEXES, createVersionsRepo, RETIRED_APP_VERSION_INDEXES } from '../../src/platform/apps/versions.repo.js';
import { createChatLogsRepo } from '../../src/platform/chat/chat-logs.repo.js';
import { CHAT_INDEXES, createChatRepo, RETIRED_CHAT_INDEXES } from '../../src/platform/chat/chat.repo.js';
import type { ChatFilesRepo } from '../../src/platform/chat/chat-files.repo.js';
import { COLLECTION_INDEXES, createCollectionRepo, RETIRED_COLLECTION_INDEXES } from '../../src/platform/datasets/collections/collection.repo.js';
import { createDataRepo, DATA_INDEXES, RETIRED_DATA_INDEXES } from '../../src/platform/datasets/data/data.repo.js';
import { API_KEY_INDEXES, createApiKeysRepo, RETIRED_API_KEY_INDEXES } from '../../src/platform/identity/api-keys.repo.js';
import type { CredentialRevocations } from '../../src/platform/identity/credential-epoch.js';
import { createOutLinksRepo, OUTLINK_INDEXES, RETIRED_OUTLINK_INDEXES } from '../../src/platform/outlinks/outlinks.repo.js';
import { createTreeChangesRepo, RETIRED_TREE_CHANGE_INDEXES, TREE_CHANGE_INDEXES } from '../../src/platform/permissions/tree-changes.repo.js';
import { buildReplica, buildTestApp, freshDatabaseUri } from '../helpers/app.js';

/**
 * Pages sorted with an `_id` tie-break. MongoDB returns a sorted page from an index only when the
 * index holds the filter's equality fields and then the sort's keys, in order (or all reversed);
 * otherwise it reads every match and sorts them (a blocking SORT) for each page. FerretDB sorts
 * in its own process whatever the indexes, so only the declarations tell: each sorted find the
 * repositories send must be served, in order, by a declared index of its collection.
 */
let mongo: Mongo;

beforeAll(() => {
  // The test URI asks for command events (monitorCommands).
  mongo = createMongo(freshDatabaseUri());
});
afterAll(async () => {
  await mongo.db.dropDatabase().catch(() => undefined);
  await mongo.client.close();
});

interface SortedFind {
  collection: string;
  filter: Record<string, unknown>;
  sort: [string, number][];
}

/** The finds with a sort that `run` sends. */
async function sortedFindsDuring(run: () => Promise<unknown>): Promise<SortedFind[]> {
  const found: SortedFind[] = [];
  const listener = (event: CommandStartedEvent) => {
    if (event.commandName !== 'find' || !event.command.sort) return;
    const sort = event.command.sort as Map<string, number> | Record<string, number>;
    found.push({
      collection: String(event.command.find),
      filter: (event.command.filter ?? {}) as Record<string, unknown>,
      sort: (sort instanceof Map ? [...sort.entries()] : Object.entries(sort)).map(([field, direction]) => [field, Number(direction)]),
    });
  };
  mongo.client.on('commandStarted', listener);
  try {
    await run();
  } finally {
    mongo.client.off('commandStarted', listener);
  }
  return found;
}

/**
 * One value or a few (`$in`: MongoDB merges one ordered read per value, up to 200) of the field:
 * a condition before the sort keys that keeps the index order. Ranges and patterns do not.
 * `$exists: false` reads the index's null entries, one point (bounds `[null, null]`, the
 * documents holding an explicit null left out on fetch), where the index is not sparse (none is).
 */
const isPoint = (condition: unknown) =>
  typeof condition !== 'object' ||
  condition === null ||
  condition instanceof ObjectId ||
  condition instanceof Date ||
  '$eq' in condition ||
  '$in' in condition ||
  (Object.keys(condition).length === 1 && (condition as { $exists?: unknown }).$exists === false);

/** Whether the index yields the find's matches in its sort order: point conditions on its leading fields, then the sort keys. */
function servesInOrder(find: SortedFind, key: Record<string, unknown>): boolean {
  const fields = Object.entries(key);
  const [first] = find.sort;
  if (!first || !fields[0] || !(fields[0][0] in find.filter)) return false;
  let at = 0;
  while (at < fields.length && fields[at]![0] !== first[0] && fields[at]![0] in find.filter && isPoint(find.filter[fields[at]![0]])) at++;
  const following = fields.slice(at, at + find.sort.length);
  if (following.length < find.sort.length) return false;
  const matches = (sign: number) => following.every(([field, direction], i) => field === find.sort[i]![0] && Number(direction) === sign * find.sort[i]![1]);
  return matches(1) || matches(-1);
}

const served = (find: SortedFind, declarations: readonly IndexDeclaration[]) =>
  declarations.some((declaration) => declaration.collection === find.collection && servesInOrder(find, declaration.key as Record<string, unknown>));

const teamId = new ObjectId().toHexString();
const appId = new ObjectId().toHexString();
const datasetId = new ObjectId().toHexString();
const collectionId = new ObjectId().toHexString();

const tmbId = new ObjectId().toHexString();

const PAGES: [name: string, declarations: readonly IndexDeclaration[], run: () => Promise<unknown>][] = [
  ['chat logs', CHAT_INDEXES, () => createChatLogsRepo(mongo.db).page({ teamId, appId, from: new Date(0), to: new Date(), skip: 20, limit: 20 })],
  ["a chat's last items", CHAT_INDEXES, () => createChatRepo(mongo.db, {} as ChatFilesRepo).lastItems(appId, 'chat-1', 30)],
  [
    'collection list',
    COLLECTION_INDEXES,
    async () => {
      const collections = createCollectionRepo(mongo.db);
      await collections.list(teamId, { datasetId, parentId: null }, { skip: 20, limit: 20 });
      await collections.list(teamId, { datasetId, parentId: collectionId, searchText: 'report', selectFolder: true }, { skip: 0, limit: 20 });
    },
  ],
  [
    'app versions',
    APP_VERSION_INDEXES,
    async () => {
      const versions = createVersionsRepo(mongo.db);
      await versions.page(appId, 20, 20);
      await versions.latestPublished(appId);
    },
  ],
  [
    'data list',
    DATA_INDEXES,
    async () => {
      const data = createDataRepo(mongo.db, async () => undefined);
      await data.list({ teamId, datasetId, collectionId }, undefined, { skip: 20, limit: 20 });
      await data.list({ teamId, datasetId, collectionId }, 'lighthouse', { skip: 0, limit: 20 });
    },
  ],
  ['dataset export', DATA_INDEXES, () => createDataRepo(mongo.db, async () => undefined).exportCursor(teamId, [datasetId, new ObjectId().toHexString()], 50_000).toArray()],
  ["a team's pending permission changes", TREE_CHANGE_INDEXES, () => createTreeChangesRepo(mongo.db, 'app').pending(teamId)],
  [
    'cluster login records',
    CLUSTER_INDEXES,
    async () => {
      const accounts = createAccountsRepo(mongo.db);
      await accounts.listLoginRecords('someone');
      await accounts.trimLoginRecords('someone', 100);
    },
  ],
  ["an app's share links", OUTLINK_INDEXES, () => createOutLinksRepo(mongo.db).list(teamId, appId, 'share')],
  [
    'input guides',
    CHAT_INDEXES,
    async () => {
      const guides = createChatRepo(mongo.db, {} as ChatFilesRepo).guides;
      await guides.list(appId, undefined, 20, 20);
      await guides.list(appId, /hello/i, 0, 20);
      await guides.query(appId, /hello/i, 'hello', 5);
    },
  ],
  [
    'API keys',
    API_KEY_INDEXES,
    async () => {
      const keys = createApiKeysRepo(mongo.db, {} as CredentialRevocations);
      await keys.list(teamId, appId);
      await keys.list(teamId, undefined);
      await keys.list(teamId, appId, tmbId);
      await keys.list(teamId, undefined, tmbId);
    },
  ],
];

describe('pages sorted with an _id tie-break', () => {
  it.each(PAGES)('%s: every sorted find is served in order by a declared index', async (_name, declarations, run) => {
    const finds = await sortedFindsDuring(run);
    expect(finds.length).toBeGreaterThan(0);
    for (const find of finds) expect(served(find, declarations), JSON.stringify(find)).toBe(true);
  });
});

/** The indexes earlier versions created that the declarations replace, and those declarations (read when used). */
const retiredIndexes = (): IndexDeclaration[] => [
  ...RETIRED_CHAT_INDEXES,
  ...RETIRED_COLLECTION_INDEXES,
  ...RETIRED_DATA_INDEXES,
  ...RETIRED_APP_VERSION_INDEXES,
  ...RETIRED_TREE_CHANGE_INDEXES,
  ...RETIRED_CLUSTER_INDEXES,
  ...RETIRED_OUTLINK_INDEXES,
  ...RETIRED_API_KEY_INDEXES,
];
const currentIndexes = (): IndexDeclaration[] => [
  ...CHAT_INDEXES,
  ...COLLECTION_INDEXES,
  ...DATA_INDEXES,
  ...APP_VERSION_INDEXES,
  ...TREE_CHANGE_INDEXES,
  ...CLUSTER_INDEXES,
  ...OUTLINK_INDEXES,
  ...API_KEY_INDEXES,
];
const keyOf = (declaration: IndexDeclaration) => Object.entries(declaration.key as Record<string, unknown>);
/** The current declarations of the collection whose key starts with the retired one's. */
const successorsOf = (retired: IndexDeclaration) =>
  currentIndexes().filter((current) => current.collection === retired.collection && JSON.stringify(keyOf(current).slice(0, keyOf(retired).length)) === JSON.stringify(keyOf(retired)));
const retiredCollections = () => [...new Set(retiredIndexes().map((declaration) => declaration.collection))].sort();

/** Index names per collection of those holding retired indexes. */
async function indexNames(db: Mongo['db']): Promise<Record<string, string[]>> {
  const names: Record<string, string[]> = {};
  for (const collection of retiredCollections()) names[collection] = (await db.collection(collection).indexes()).map((index) => String(index.name)).sort();
  return names;
}

describe('retired indexes', () => {
  it('each is a strict prefix of a current index of its collection, so no query needs it', () => {
    expect(retiredIndexes().length).toBe(10);
    for (const retired of retiredIndexes()) {
      const successors = successorsOf(retired);
      expect(successors.length, JSON.stringify(retired)).toBeGreaterThan(0);
      expect(successors.every((successor) => keyOf(successor).length > keyOf(retired).length && indexName(successor) !== indexName(retired)), JSON.stringify(retired)).toBe(true);
    }
  });
});

describe('start-up on a database holding the indexes these replace', () => {
  it('builds the new ones, drops the old ones; a second start-up changes nothing', async () => {
    const uri = freshDatabaseUri();
    const seed = createMongo(uri);
    await ensureIndexes(seed.db, retiredIndexes());
    expect(Object.values(await indexNames(seed.db)).flat()).toEqual(expect.arrayContaining(retiredIndexes().map(indexName)));
    await seed.client.close();
    const t = await buildTestApp({ MONGODB_URI: uri });
    try {
      const after = await indexNames(t.app.mongo.db);
      for (const retired of retiredIndexes()) {
        for (const successor of successorsOf(retired)) expect(after[retired.collection], retired.collection).toContain(indexName(successor));
        expect(after[retired.collection], retired.collection).not.toContain(indexName(retired));
        expect(t.logs()).toContain(`dropped the retired index ${retired.collection}.${indexName(retired)}`);
      }
      expect(t.logs()).not.toContain('could not drop');
      const second = await buildReplica(t);
      try {
        expect(await indexNames(t.app.mongo.db)).toEqual(after);
        expect(second.logs()).not.toContain('retired index');
      } finally {
        await second.close();
      }
    } finally {
      await t.close();
    }
  });

  it('a fresh database starts without a word about them', async () => {
    const t = await buildTestApp();
    try {
      expect(t.logs()).not.toContain('retired index');
      const names = await indexNames(t.app.mongo.db);
      for (const retired of retiredIndexes()) expect(names[retired.collection]).not.toContain(indexName(retired));
    } finally {
      await t.close();
    }
  });
});

describe('dropRetiredIndexes', () => {
  const logger = () => {
    const lines = { info: [] as string[], warn: [] as string[] };
    return { lines, log: { info: (message: string) => void lines.info.push(message), warn: (message: string) => void lines.warn.push(message) } };
  };

  it('names an index as the server does', async () => {
    const own = createMongo(freshDatabaseUri());
    try {
      await ensureIndexes(own.db, [...retiredIndexes(), ...currentIndexes()]);
      const names = Object.values(await indexNames(own.db)).flat();
      for (const declaration of [...retiredIndexes(), ...currentIndexes()].filter((d) => retiredCollections().includes(d.collection))) expect(names).toContain(indexName(declaration));
      expect(indexName({ collection: 'x', key: { appId: 1, time: -1 } })).toBe('appId_1_time_-1');
      expect(indexName({ collection: 'x', key: { username: 1 }, options: { name: 'user' } })).toBe('user');
    } finally {
      await own.db.dropDatabase();
      await own.client.close();
    }
  });

  it('passes over collections and indexes that are not there, silently', async () => {
    const own = createMongo(freshDatabaseUri());
    try {
      const { lines, log } = logger();
      await own.db.collection('chats').insertOne({ title: 'a collection without the index' });
      expect(await dropRetiredIndexes(own.db, { retired: retiredIndexes(), current: currentIndexes() }, log)).toEqual([]);
      expect(lines).toEqual({ info: [], warn: [] });
    } finally {
      await own.db.dropDatabase();
      await own.client.close();
    }
  });

  it('never drops an index declared current, and goes on past a failure with a warning', async () => {
    const own = createMongo(freshDatabaseUri());
    try {
      const current: IndexDeclaration = { collection: 'things', key: { a: 1, b: 1 } };
      const sameKeyOtherName: IndexDeclaration = { collection: 'things', key: { a: 1, b: 1 }, options: { name: 'ab' } };
      const old: IndexDeclaration = { collection: 'things', key: { a: 1 } };
      const undroppable: IndexDeclaration = { collection: 'things', key: { _id: 1 }, options: { name: '_id_' } };
      await ensureIndexes(own.db, [current, old]);
      const { lines, log } = logger();
      const dropped = await dropRetiredIndexes(own.db, { retired: [current, sameKeyOtherName, undroppable, old], current: [current] }, log);
      expect(dropped).toEqual(['things.a_1']);
      expect((await own.db.collection('things').indexes()).map((index) => index.name).sort()).toEqual(['_id_', 'a_1_b_1']);
      expect(lines.warn).toHaveLength(1);
      expect(lines.warn[0]).toContain('things._id_');
      expect(lines.warn[0]).toContain('code 72');
    } finally {
      await own.db.dropDatabase();
      await own.client.close();
    }
  });
});
