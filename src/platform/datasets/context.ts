import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { describeError } from '../../infra/database-errors.js';
import { createMongoLocks, type LockHold } from '../../infra/mongo-lock.js';
import { createVersionStamps, LIST_STAMP_LEASE_MS } from '../../infra/version-stamps.js';
import type { TeamLimits } from '../identity/team-limits-types.js';
import type { ChargeUsage } from '../identity/usage-charge.js';
import type { ModelRegistry } from '../../domain/models.js';
import { createCollectionRepo } from './collections/collection.repo.js';
import { collectionStampKey, createCollectionCache } from './collections/collection-cache.js';
import { createDataRepo } from './data/data.repo.js';
import { createDataChangeLog } from './data/data-changes.repo.js';
import { createDataListReadModel, dataListStampKey } from './data/data-list.read-model.js';
import { createDatasetRepo } from './datasets/dataset.repo.js';
import { createDatasetAuth, createDatasetPermissions } from './datasets/dataset-auth.js';
import { createDatasetListReadModel, datasetListStampKey } from './datasets/dataset-list.read-model.js';
import { createFileRepo } from './files/file.repo.js';
import { createLinkReadTurns } from './files/link-read-turns.js';
import { createDatasetIndex } from './search/dataset-index.js';
import { createEmbedderRegistry } from './search/embedder.js';
import { createIndexStore } from './search/index-store.repo.js';
import { createIndexWriteLocks } from './search/index-write-lock.repo.js';
import { createVectorRepo } from './search/vector.repo.js';
import { createTrainingRepo } from './training/training.repo.js';

/** How long a process searches without checking for other processes' writes (they show within about this). */
const SEARCH_STAMP_LEASE_MS = 1000;
/** Characters of q and a the data list read model keeps, all collections together (about 64 MB). */
const DATA_LIST_CACHE_CHARS = 32 * 1024 * 1024;

/** Everything the datasets services need, built once per app from explicit dependencies. */
export function createDatasetsContext(app: FastifyInstance) {
  const db = app.mongo.db;
  // The team's dataset and collection stamps are read at most once per lease; a bump waits the
  // lease out, so the next request after a write sees it on every process.
  const stamps = createVersionStamps(db, { leaseMs: LIST_STAMP_LEASE_MS });
  const listChanged = (teamId: string) => stamps.bump(datasetListStampKey(teamId));
  const collectionsChanged = (teamId: string) => stamps.bump(collectionStampKey(teamId));
  // Not leased: a data list page reads its collection's stamp each time, and the training
  // worker's writes, which bump it, wait for nobody.
  const unleased = createVersionStamps(db, { leaseMs: 0 });
  const dataChanges = createDataChangeLog(db);
  const repos = {
    datasets: createDatasetRepo(db, listChanged),
    collections: createCollectionRepo(db, collectionsChanged),
    // The change is recorded before the stamp moves, so a list refreshing on the new stamp finds
    // it. When the record fails the stamp still moves: a list that finds no new change reloads.
    data: createDataRepo(db, async (changes) => {
      const failure = await dataChanges.record(changes).then(
        () => undefined,
        (error: unknown) => error,
      );
      await unleased.bump(...new Set(changes.map((change) => dataListStampKey(change.collectionId))));
      if (failure !== undefined) throw failure;
    }),
    dataChanges,
    trainings: createTrainingRepo(db, (error) => app.log.warn(`training queue counts: upkeep failed: ${describeError(error)}`)),
    vectors: createVectorRepo(db, (teamId, delta) => (app.teamLimits as TeamLimits).vectorsStored(teamId, delta)),
    files: createFileRepo(db),
    indexWrites: createIndexWriteLocks(db),
    /** Stamps of deleted datasets and collections are removed with them (cascade.ts). */
    stamps: unleased,
  };
  const permissions = createDatasetPermissions(db, { memberProfiles: app.identity.memberProfiles, onChange: listChanged });
  /** The team's datasets and permission rows, per process: the dataset lists and dataset authorisation. */
  const datasetList = createDatasetListReadModel({
    stamps,
    load: async (teamId) => {
      const [datasets, rows] = await Promise.all([repos.datasets.listTeam(teamId), permissions.rows.teamRows(teamId)]);
      return { datasets, rows };
    },
    toResource: permissions.toResource,
  });
  const dataList = createDataListReadModel({
    stamps: unleased,
    load: (owner, limit) => repos.data.listRows(owner, limit),
    loadByIds: (owner, ids) => repos.data.listRowsByIds(owner, ids),
    changes: (owner) => dataChanges.of(owner.teamId, owner.collectionId),
    maxItems: (app.config as Config).DATA_LIST_CACHE_ITEMS,
    maxChars: DATA_LIST_CACHE_CHARS,
  });
  const collectionCache = createCollectionCache({ stamps, load: (id) => repos.collections.findForAuth(id) });
  const locks = createMongoLocks(db);
  const wakeListeners: (() => void)[] = [];
  return {
    config: app.config as Config,
    log: app.log as FastifyBaseLogger,
    models: app.models as ModelRegistry,
    teamLimits: app.teamLimits as TeamLimits,
    /** Records what a request's model calls used and counts it against the caller's API key. */
    chargeUsage: app.identity.chargeUsage as ChargeUsage,
    repos,
    permissions,
    /**
     * Serialises changes to one team's dataset tree: creates into a folder, moves (the shared
     * permission service takes the same lock) and deletes. Like the two below, `run` calls
     * `lock.assertHeld()` before each write the lock guards: a holder that stalled past its
     * lease stops there (LockLostError, answered 503).
     */
    withDatasetTree: <T>(teamId: string, run: (lock: LockHold) => Promise<T>): Promise<T> => permissions.tree.withTeamLock(teamId, run),
    /**
     * Serialises changes to one dataset's collection tree: creates, moves and deletes (a dataset
     * delete takes it too, so no collection is created into a dataset that is going away).
     */
    withCollectionTree: <T>(datasetId: string, run: (lock: LockHold) => Promise<T>): Promise<T> => locks.withLock(`dataset_collections:${datasetId}`, run),
    /** One link sync of a collection at a time, across processes (two would each import a replacement). */
    withLinkSync: <T>(collectionId: string, run: (lock: LockHold) => Promise<T>): Promise<T> => locks.withLock(`dataset_link_sync:${collectionId}`, run, 'This collection is being synced already, try again'),
    auth: createDatasetAuth({ permissions, datasetList, collections: collectionCache, data: repos.data }),
    datasetList,
    dataList,
    searchIndex: createDatasetIndex(
      {
        ...repos,
        store: createIndexStore(db),
        stamps: createVersionStamps(db, { leaseMs: SEARCH_STAMP_LEASE_MS }),
        bumps: unleased,
        log: app.log,
      },
      { maxBytes: app.config.SEARCH_INDEX_MAX_BYTES },
    ),
    embedders: lazy(() => createEmbedderRegistry(app.models, app.config)),
    /** A team's link reads in turn, across its requests (files/link-read-turns.ts). */
    linkReads: createLinkReadTurns(),
    /** Tells the training worker (if running) that new items were queued. */
    wakeWorker: () => {
      for (const listener of wakeListeners) listener();
    },
    onWake: (listener: () => void) => void wakeListeners.push(listener),
  };
}

function lazy<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= make();
    return value;
  };
}

export type DatasetsContext = ReturnType<typeof createDatasetsContext>;
