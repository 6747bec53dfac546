import multipart from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { RequiredPermission } from '../../domain/permission.js';
import { startPeriodicTask, startRetryingTask } from '../../infra/backoff.js';
import { describeError } from '../../infra/database-errors.js';
import type { EmbeddingPurpose } from '../../infra/embeddings.js';
import type { AuthContext } from '../auth/types.js';
import { RESOURCE_PERMISSION_INDEXES } from '../permissions/resource-permissions.repo.js';
import { registerTreeChangeResume } from '../permissions/tree-change-resume.js';
import { COLLECTION_INDEXES, RETIRED_COLLECTION_INDEXES } from './collections/collection.repo.js';
import { registerCollectionRoutes } from './collections/collection.routes.js';
import { registerImportResume } from './collections/collection-imports.js';
import { createDatasetsContext, type DatasetsContext } from './context.js';
import { DATA_INDEXES, RETIRED_DATA_INDEXES } from './data/data.repo.js';
import { DATA_CHANGE_INDEXES } from './data/data-changes.repo.js';
import { DATA_CHANGES_KEPT_MS } from './data/data-list.read-model.js';
import { registerDataRoutes } from './data/data.routes.js';
import { DATASET_INDEXES, type DatasetRecord } from './datasets/dataset.repo.js';
import type { AuthorizedDataset } from './datasets/dataset-auth.js';
import { registerDatasetRoutes } from './datasets/dataset.routes.js';
import { registerDatasetDeletionResume } from './datasets/dataset-deletion.js';
import { createChatLinkRenewer, createExpiredChatLinkReader, type RunChat } from './files/expired-chat-link.js';
import { FILE_INDEXES } from './files/file.repo.js';
import { registerFileRoutes } from './files/file.routes.js';
import { createFileService, type FileService, MAX_BASE64_CHARS } from './files/file.service.js';
import type { UploadedFile } from './files/multipart.js';
import { deleteUnusedDatasetFiles, FIRST_SWEEP_WINDOW_MS, UNUSED_FILE_WINDOW_MS } from './files/files-sweep.js';
import { registerSearchIndexMetrics } from './search/index-metrics.js';
import { INDEX_STORE_INDEXES } from './search/index-store.repo.js';
import { INDEX_WRITE_LOCK_INDEXES, upgradeIndexWriteLocks } from './search/index-write-lock.repo.js';
import { repairAbandonedIndexWrites } from './search/index-writes.js';
import { createSearchService, type SearchService } from './search/search.service.js';
import { registerSearchRoutes } from './search/search.routes.js';
import { VECTOR_INDEXES } from './search/vector.repo.js';
import { TRAINING_INDEXES } from './training/training.repo.js';
import { registerTrainingRoutes } from './training/training.routes.js';
import { registerTrainingQueueMetrics } from './training/training-metrics.js';
import { createTrainingWorker, type TrainingWorker } from './training/training-worker.js';

export type { SearchParams, SearchResultItem, SearchService } from './search/search.service.js';
/** How other modules read a document's text (the readFiles node): large CSV files in a worker thread. */
export { extractTextOffThread } from './files/csv-read.js';

/** What other modules (chat, openai, identity) use of datasets. */
export interface DatasetsAccess {
  /** The dataset, if it is in the caller's team and the caller holds `required` on it (judged on the team's read model). */
  authorize(auth: AuthContext, datasetId: string, required: RequiredPermission, field?: string): Promise<AuthorizedDataset>;
  /** A data item the caller can read, with where it lives. */
  authorizeData(auth: AuthContext, dataId: string): Promise<{ datasetId: string; collectionId: string }>;
  /**
   * Of `datasetIds`, the team's datasets in that order, from the team's read model (whole
   * documents under the team's stamp, which every dataset write bumps: usually no read).
   */
  findInTeam(teamId: string, datasetIds: readonly string[]): Promise<DatasetRecord[]>;
  /** One vector per text with the configured vector model `model`, and the tokens the provider counted. */
  embed(model: string, texts: string[], purpose?: EmbeddingPurpose): Promise<{ vectors: number[][]; tokens: number }>;
  /** Dataset search: searchTest and the workflow's search node. */
  search: SearchService;
  /**
   * Subscribes to chat files a share-page or team-space visitor stored under the app of their
   * credential: `listener` runs after the file is stored and may refuse it by throwing, having
   * removed it (the chat module checks that the app still stands: apps deleted meanwhile).
   */
  onAppFileStored(listener: AppFileStoredListener): void;
  /** The `chat` bucket as the chat module stores, reads and takes back its files (inline images). */
  chatFiles: ChatFileStore;
}

export type AppFileStoredListener = (teamId: string, appId: string) => Promise<void>;

/** Chat files by the upload route's own rules (team, owner fields, visitors' quota and app check). */
export interface ChatFileStore {
  /** Stores a file of the chat `owner` names; answers its id and signed read link. */
  store(auth: AuthContext, file: UploadedFile, owner: { chatId: string; appId: string }): Promise<{ fileId: string; previewUrl: string }>;
  /** Deletes the team's files among `fileIds` (another team's stay). */
  discard(teamId: string, fileIds: string[]): Promise<void>;
  /**
   * A run's read of a file of its own chat behind a read link whose token expired (undefined when
   * the token has not expired: read it over the file route); see files/expired-chat-link.ts.
   */
  readExpired(token: string, run: RunChat, maxBytes: number): Promise<{ buffer: Buffer; contentType?: string } | undefined>;
  /** A chat window's new links for its own files' read links among `urls` that expire within a day (old URL -> new); see files/expired-chat-link.ts. */
  renewLinks(urls: readonly string[], chat: RunChat): Promise<Map<string, string>>;
}

/** The datasets module's services: what other modules use (`DatasetsAccess`) and what its routes and tests use. */
export interface DatasetsModule extends DatasetsAccess {
  ctx: DatasetsContext;
  /** The training worker; tests drive it with runOnce()/drain() when TRAINING_WORKER=false. */
  trainingWorker: TrainingWorker;
  /** Runs the onAppFileStored listeners (the upload route, after storing a visitor's file). */
  appFileStored: AppFileStoredListener;
  /** The file service the upload routes and `chatFiles` share. */
  files: FileService;
}

declare module 'fastify' {
  interface FastifyInstance {
    datasets: DatasetsModule;
  }
}

const IMAGE_CLEANUP_MS = 10 * 60 * 1000;
/** Dataset files no collection uses: hourly, as the reference. */
const UNUSED_FILE_SWEEP_MS = 60 * 60 * 1000;
/** The data change log holds minutes of writes; swept often, so a list's read of it stays small on FerretDB. */
const DATA_CHANGES_SWEEP_MS = 60 * 1000;
/** How soon the search index of a dataset another process deleted is freed here. */
const SEARCH_INDEX_EVICTION_MS = 60 * 1000;
/** How often index writes a dead process left (its lock's lease over) are repaired when nobody writes the dataset. */
const INDEX_WRITE_REPAIR_MS = 60 * 1000;
const WARM_UP_RETRY = { firstMs: 2_000, maxMs: 60_000 };
/**
 * uploadImage takes a JSON data URI: the largest one stored, and room for the other fields. A
 * larger body (up to UPLOAD_LIMIT_BYTES before) was parsed and walked before authentication
 * only to be refused: 40 MB of array held the event loop for 6 s.
 */
const LARGE_BODY_ROUTES = new Map([['/api/common/file/uploadImage', MAX_BASE64_CHARS + 64 * 1024]]);

/** The datasets module's services (datasets, collections, data, training, search, files) as `app.datasets`. */
export const datasetsServices = fp(
  async function datasetsServices(api: FastifyInstance) {
    const ctx = createDatasetsContext(api);
    const trainingWorker = createTrainingWorker(ctx, { lockMs: api.config.TRAINING_LOCK_MS, onIterationFailure: (error) => api.opsMetrics.databaseError('training-worker', error) });
    const search = createSearchService(ctx);
    const appFileListeners: AppFileStoredListener[] = [];
    const appFileStored = async (teamId: string, appId: string) => {
      for (const listener of appFileListeners) await listener(teamId, appId);
    };
    const files = createFileService(ctx, appFileStored);
    api.decorate('datasets', {
      ctx,
      trainingWorker,
      search,
      onAppFileStored: (listener: AppFileStoredListener) => void appFileListeners.push(listener),
      appFileStored,
      files,
      chatFiles: {
        store: (auth, file, owner) => files.store(auth, 'chat', file, owner),
        discard: (teamId, fileIds) => ctx.repos.files.deleteMany('chat', teamId, fileIds),
        readExpired: createExpiredChatLinkReader({ fileTokenKey: ctx.config.FILE_TOKEN_KEY, files: ctx.repos.files }),
        renewLinks: createChatLinkRenewer({ fileTokenKey: ctx.config.FILE_TOKEN_KEY, files: ctx.repos.files }),
      },
      authorize: (auth: AuthContext, datasetId: string, required: RequiredPermission, field?: string) => ctx.auth.authDataset(auth, datasetId, required, field),
      authorizeData: async (auth: AuthContext, dataId: string) => {
        const { data } = await ctx.auth.authData(auth, dataId, 'read');
        return { datasetId: data.datasetId, collectionId: data.collectionId };
      },
      findInTeam: async (teamId: string, datasetIds: readonly string[]) => {
        const team = await ctx.datasetList.team(teamId);
        return datasetIds.flatMap((id) => team.byId.get(id)?.doc ?? []);
      },
      embed: (model: string, texts: string[], purpose?: EmbeddingPurpose) => ctx.embedders().forModel(model).embed(texts, purpose),
    } satisfies DatasetsModule);
    api.teamLimits.countUsing('datasets', (teamId) => ctx.repos.datasets.countNonFolder(teamId));
    api.teamLimits.countUsing('vectors', (teamId) => ctx.repos.vectors.countByTeam(teamId));
    registerSearchIndexMetrics(api.opsMetrics.registry, ctx.searchIndex.stats);
    registerTrainingQueueMetrics({
      registry: api.opsMetrics.registry,
      trainings: ctx.repos.trainings,
      now: () => Date.now(),
      onError: (error) => {
        api.opsMetrics.databaseError('metrics', error);
        api.log.warn(`training queue metrics unavailable: ${describeError(error)}`);
      },
    });

    api.startup.add('indexes: datasets', async () => {
      await api.mongo.ensureIndexes([
        ...DATASET_INDEXES,
        ...COLLECTION_INDEXES,
        ...DATA_INDEXES,
        ...DATA_CHANGE_INDEXES,
        ...TRAINING_INDEXES,
        ...VECTOR_INDEXES,
        ...INDEX_STORE_INDEXES,
        ...INDEX_WRITE_LOCK_INDEXES,
        ...FILE_INDEXES,
        ...RESOURCE_PERMISSION_INDEXES,
      ]);
      // The permission changes' retired index is the apps module's to drop.
      await api.mongo.dropRetiredIndexes([...RETIRED_COLLECTION_INDEXES, ...RETIRED_DATA_INDEXES]);
    });
    // Before the worker's or the sweep's first index write: what a stopped process of the previous version left is still repaired.
    api.startup.add('datasets: index write locks of the previous version', () => upgradeIndexWriteLocks(api.mongo.db));
    const cleanups: { stop(): void }[] = [];
    let swept = false;
    api.startup.add('datasets: training worker and cleanups', async () => {
      await ctx.repos.trainings.flagEarlierFailures();
      if (api.config.TRAINING_WORKER) trainingWorker.start();
      cleanups.push(
        startPeriodicTask({
          name: 'expired image cleanup',
          intervalMs: IMAGE_CLEANUP_MS,
          task: () => ctx.repos.files.deleteExpiredImages(),
          log: api.log,
          onFailure: (error) => api.opsMetrics.databaseError('image-cleanup', error),
        }),
        startPeriodicTask({
          name: 'unused dataset file sweep',
          intervalMs: UNUSED_FILE_SWEEP_MS,
          task: async () => {
            // The first sweep of a process also looks at files uploaded while none ran.
            const deleted = await deleteUnusedDatasetFiles(ctx, new Date(), swept ? UNUSED_FILE_WINDOW_MS : FIRST_SWEEP_WINDOW_MS);
            swept = true;
            if (deleted > 0) api.log.info(`deleted ${deleted} dataset file(s) no collection uses`);
          },
          log: api.log,
          onFailure: (error) => api.opsMetrics.databaseError('unused-file-sweep', error),
        }),
        startPeriodicTask({
          name: 'data change log sweep',
          intervalMs: DATA_CHANGES_SWEEP_MS,
          task: () => ctx.repos.dataChanges.sweep(new Date(Date.now() - DATA_CHANGES_KEPT_MS)),
          log: api.log,
          onFailure: (error) => api.opsMetrics.databaseError('data-change-sweep', error),
        }),
        startPeriodicTask({
          name: 'search index repair of abandoned writes',
          intervalMs: INDEX_WRITE_REPAIR_MS,
          task: async () => {
            const repaired = await repairAbandonedIndexWrites(ctx);
            if (repaired > 0) api.log.info(`search index: repaired ${repaired} write(s) a stopped process left unfinished`);
          },
          log: api.log,
          onFailure: (error) => api.opsMetrics.databaseError('search-index-repair', error),
        }),
        startPeriodicTask({
          name: 'deleted datasets search index eviction',
          intervalMs: SEARCH_INDEX_EVICTION_MS,
          task: () => ctx.searchIndex.evictDeleted(),
          log: api.log,
          onFailure: (error) => api.opsMetrics.databaseError('search-index-eviction', error),
        }),
      );
    });
    registerDatasetDeletionResume(api, ctx);
    registerImportResume(api, ctx);
    registerTreeChangeResume(api, 'datasets', ctx.permissions);
    // Search indexes are opened on start from their stored snapshots (rebuilt from the data items
    // only where none exists yet): in the background so readiness does not wait for large
    // datasets (a search that comes first opens its own). A failed pass (the
    // database went away) is retried with backoff; indexes already loaded are kept. It stops
    // once the open indexes reach SEARCH_INDEX_MAX_BYTES (the rest open on their first search).
    let closing = false;
    const warmAll = async () => {
      for await (const dataset of ctx.repos.datasets.streamSearchable()) {
        if (closing) return;
        if (!(await ctx.searchIndex.warm(dataset.id, dataset.vectorModel))) {
          api.log.info(`search index warm-up stopped: the open indexes reach SEARCH_INDEX_MAX_BYTES (${api.config.SEARCH_INDEX_MAX_BYTES}); the others open on their first search`);
          return;
        }
      }
    };
    let warmUp: { stop(): Promise<void> } | undefined;
    api.startup.add('datasets: warm search indexes', async () => {
      warmUp = startRetryingTask({
        name: 'warming the dataset search indexes',
        retry: WARM_UP_RETRY,
        log: api.log,
        onFailure: (error) => api.opsMetrics.databaseError('search-index-warm-up', error),
        run: warmAll,
      });
    });
    // preClose: the worker finishes its batch while the database is still open.
    api.addHook('preClose', async () => {
      closing = true;
      void warmUp?.stop();
      for (const cleanup of cleanups) cleanup.stop();
      await trainingWorker.stop();
      await ctx.repos.trainings.countsSettled();
      await ctx.searchIndex.close();
    });
  },
  { name: 'platform-datasets', dependencies: ['platform-identity', 'platform-team-limits', 'platform-system', 'metrics'] },
);

/** The datasets module's routes, under /api. */
export async function datasetsRoutes(api: FastifyInstance): Promise<void> {
  const { ctx, search, files } = api.datasets;
  api.addHook('onRoute', (route) => {
    const bodyLimit = LARGE_BODY_ROUTES.get(route.url);
    if (bodyLimit !== undefined) route.bodyLimit = bodyLimit;
  });
  await api.register(multipart, { limits: { fileSize: api.config.UPLOAD_LIMIT_BYTES, files: 1 } });
  registerDatasetRoutes(api, ctx);
  registerCollectionRoutes(api, ctx, files);
  registerDataRoutes(api, ctx);
  registerTrainingRoutes(api, ctx);
  registerSearchRoutes(api, ctx, search);
  registerFileRoutes(api, ctx, files);
}
