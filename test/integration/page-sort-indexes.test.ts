import { type CommandStartedEvent, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMongo, ensureIndexes, type IndexDeclaration, type Mongo } from '../../src/infra/mongo.js';
import { APP_VERSION_INDEXES, createVersionsRepo, RETIRED_APP_VERSION_INDEXES } from '../../src/platform/apps/versions.repo.js';
import { createChatLogsRepo } from '../../src/platform/chat/chat-logs.repo.js';
import { CHAT_INDEXES, createChatRepo, RETIRED_CHAT_INDEXES } from '../../src/platform/chat/chat.repo.js';
import type { ChatFilesRepo } from '../../src/platform/chat/chat-files.repo.js';
import { COLLECTION_INDEXES, createCollectionRepo, RETIRED_COLLECTION_INDEXES } from '../../src/platform/datasets/collections/collection.repo.js';
import { createDataRepo, DATA_INDEXES, RETIRED_DATA_INDEXES } from '../../src/platform/datasets/data/data.repo.js';
import { buildTestApp, freshDatabaseUri } from '../helpers/app.js';

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
 */
const isPoint = (condition: unknown) =>
  typeof condition !== 'object' || condition === null || condition instanceof ObjectId || condition instanceof Date || '$eq' in condition || '$in' in condition;

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

const served = (find: SortedFind, declarations: IndexDeclaration[]) =>
  declarations.some((declaration) => declaration.collection === find.collection && servesInOrder(find, declaration.key as Record<string, unknown>));

const teamId = new ObjectId().toHexString();
const appId = new ObjectId().toHexString();
const datasetId = new ObjectId().toHexString();
const collectionId = new ObjectId().toHexString();

const PAGES: [name: string, declarations: IndexDeclaration[], run: () => Promise<unknown>][] = [
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
];

describe('pages sorted with an _id tie-break', () => {
  it.each(PAGES)('%s: every sorted find is served in order by a declared index', async (_name, declarations, run) => {
    const finds = await sortedFindsDuring(run);
    expect(finds.length).toBeGreaterThan(0);
    for (const find of finds) expect(served(find, declarations), JSON.stringify(find)).toBe(true);
  });
});

describe('start-up on a database holding the indexes these replace', () => {
  it('builds the new ones beside them', async () => {
    const uri = freshDatabaseUri();
    const seed = createMongo(uri);
    await ensureIndexes(seed.db, [...RETIRED_CHAT_INDEXES, ...RETIRED_COLLECTION_INDEXES, ...RETIRED_DATA_INDEXES, ...RETIRED_APP_VERSION_INDEXES]);
    await seed.client.close();
    const t = await buildTestApp({ MONGODB_URI: uri });
    try {
      const changed = [...CHAT_INDEXES, ...COLLECTION_INDEXES, ...DATA_INDEXES, ...APP_VERSION_INDEXES].filter((declaration) => '_id' in (declaration.key as object));
      expect(changed.length).toBe(6);
      for (const declaration of changed) {
        const keys = (await t.app.mongo.db.collection(declaration.collection).indexes()).map((index) => JSON.stringify(index.key));
        expect(keys, declaration.collection).toContain(JSON.stringify(declaration.key));
      }
    } finally {
      await t.close();
    }
  });
});
