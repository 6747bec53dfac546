import { describeError } from '../../../infra/database-errors.js';
import { Errors } from '../../../infra/errors.js';
import { urlForMessage } from '../../../infra/join-url.js';
import { withLeaseRenewal } from '../../../infra/lease-renewal.js';
import { LockLostError } from '../../../infra/mongo-lock.js';
import { newId } from '../../../infra/plain-record.js';
import type { AuthContext } from '../../auth/types.js';
import { deleteCollectionsCascade } from '../cascade.js';
import type { DatasetsContext } from '../context.js';
import type { DatasetRecord } from '../datasets/dataset.repo.js';
import { splitSourceText, splitStoredFile } from '../files/large-text.js';
import { type PushItem, type PushResult, predictVectors, pushToTrainingQueue } from '../training/enqueue.js';
import type { NewCollection } from './collection.repo.js';
import type { ChunkSettings } from './collection.schema.js';
import { pageSelectorOf, readLinkInTurn, readStoredQa, readUsableFile } from './collection-sources.js';
import { IMPORT_LEASE_MS } from './collection-imports.js';
import { splitOptionsOf } from './source-text.js';

export interface ImportResult {
  collectionId: string;
  results: PushResult;
}

/** Web pages overlap their chunks whatever the training mode (the reference's link loader). */
export const LINK_OVERLAP_RATIO = 0.2;

/** A collection an import creates (its creator, when not the caller, as a sync keeps it). */
type ImportedCollection = Omit<NewCollection, 'teamId' | 'tmbId' | 'datasetId'> & { tmbId?: string };

/** Collection creation from sources (text, link, files, CSV): split, check limits, create, queue. */
export function createCollectionImportService(ctx: DatasetsContext) {
  const { collections } = ctx.repos;

  async function checkParent(auth: AuthContext, datasetId: string, parentId: string | null | undefined) {
    if (!parentId) return;
    const parent = await collections.findById(auth.teamId, parentId);
    if (!parent || parent.datasetId !== datasetId) throw Errors.missingParams(`Invalid field 'parentId': collection ${parentId} is not in dataset ${datasetId}`);
    if (parent.type !== 'folder') throw Errors.missingParams(`Invalid field 'parentId': collection ${parentId} is not a folder`);
  }

  /**
   * Inserts a collection under the dataset's collection-tree lock, after checking again that the
   * dataset and the parent folder exist: a racing folder or dataset delete cannot leave it orphaned
   * (nor one that took the lock over from a holder stalled past its lease: that holder inserts nothing).
   * `tmbId`: the creator when it is not the caller (a synced link keeps its creator). A failure
   * once the insert was sent (its answer lost, say) takes the collection back: the
   * create answers an error, and the client's retry must not make a second one.
   * `importing`: the collection is written with its import's intent (collection-imports.ts).
   */
  async function insertInTree(
    auth: AuthContext,
    collection: Omit<NewCollection, 'teamId' | 'tmbId'> & { tmbId?: string },
    importing?: { replaces?: string },
  ): Promise<string> {
    const id = newId();
    let sent = false;
    try {
      return await ctx.withCollectionTree(collection.datasetId, async (lock) => {
        if (!(await ctx.repos.datasets.findById(auth.teamId, collection.datasetId))) throw Errors.unExistDataset(`Dataset ${collection.datasetId} not found`);
        await checkParent(auth, collection.datasetId, collection.parentId);
        lock.assertHeld();
        sent = true;
        return collections.insert({
          ...collection,
          _id: id,
          teamId: auth.teamId,
          tmbId: collection.tmbId ?? auth.tmbId,
          ...(importing ? { importing: { leaseMs: IMPORT_LEASE_MS, replaces: importing.replaces } } : {}),
        });
      });
    } catch (error) {
      if (sent) await takeBack(auth.teamId, { _id: id, datasetId: collection.datasetId });
      throw error;
    }
  }

  /**
   * Deletes a collection an import or create made before it failed: content first, the collection
   * last (a failure here leaves it visible to delete); its file stays, as it was there before (a
   * retry imports it again). A failure of this is logged: the collection stays.
   */
  async function takeBack(teamId: string, collection: { _id: string; datasetId: string }): Promise<void> {
    await deleteCollectionsCascade(ctx, teamId, [collection], undefined, { keepFiles: true }).catch((error: unknown) => {
      ctx.log.warn(`collection ${collection._id} created before a failure and kept: ${describeError(error)}`);
    });
  }

  /** What refuses an import before anything is written: the parent, a folder dataset, the dataset size, an unknown vector model. */
  async function checkImport(auth: AuthContext, dataset: DatasetRecord, collection: Pick<NewCollection, 'parentId' | 'trainingType'>, items: PushItem[]): Promise<void> {
    await checkParent(auth, dataset._id, collection.parentId);
    if (dataset.type === 'folder') throw Errors.missingParams(`Dataset ${dataset._id} is a folder; collections belong to datasets`);
    await ctx.teamLimits.assertDatasetSize(auth.teamId, await predictVectors(items, collection.trainingType));
    if (collection.trainingType !== 'qa') ctx.embedders().vectorModel(dataset.vectorModel);
  }

  /**
   * An import checkImport passed: the collection is created with its import's intent (hidden from
   * lists while it is there), its items queued in batches while the intent's lease is renewed,
   * then the intent removed. A process killed in between leaves the intent, whose lapsed lease
   * the import sweep takes back (collection-imports.ts); one whose lease lapsed (stalled) stops
   * before its next batch and takes itself back. If queueing fails the new collection is taken
   * back with whatever was trained of it, so nothing is half-imported. `replaces` (a link sync):
   * the intent stays, marked queued, for the sync to remove once the old collection is deleted.
   */
  async function insertWithItems(
    auth: AuthContext,
    dataset: DatasetRecord,
    collection: ImportedCollection,
    items: PushItem[],
    prompt?: string,
    replaces?: string,
  ): Promise<ImportResult> {
    const collectionId = await insertInTree(auth, { ...collection, datasetId: dataset._id }, { replaces });
    let held = true;
    const lost = () => new LockLostError(`dataset_collections:${collectionId}`, 'the import lease ran out');
    try {
      const results = await withLeaseRenewal(
        IMPORT_LEASE_MS / 3,
        async () => {
          // A failed renewal (database error) is tried again; only a lapsed lease stops the import.
          if (!(await collections.renewImport(collectionId, IMPORT_LEASE_MS))) held = false;
        },
        () =>
          pushToTrainingQueue(ctx, {
            teamId: auth.teamId,
            tmbId: auth.tmbId,
            dataset,
            collectionId,
            mode: collection.trainingType,
            prompt,
            items,
            beforeBatch: () => {
              if (!held) throw lost();
            },
          }),
      );
      const whole = replaces ? await collections.renewImport(collectionId, IMPORT_LEASE_MS, true) : await collections.endImport(collectionId, true);
      if (!whole) throw lost();
      return { collectionId, results };
    } catch (error) {
      await takeBack(auth.teamId, { _id: collectionId, datasetId: dataset._id });
      throw error;
    }
  }

  /** An import: limits are checked before anything is written (checkImport), then insertWithItems. */
  async function createWithItems(auth: AuthContext, dataset: DatasetRecord, collection: ImportedCollection, items: PushItem[], prompt?: string): Promise<ImportResult> {
    await checkImport(auth, dataset, collection, items);
    return insertWithItems(auth, dataset, collection, items, prompt);
  }

  const base = (input: ChunkSettings & { parentId?: string | null; metadata?: Record<string, unknown>; tags?: string[] }) => ({
    parentId: input.parentId ?? null,
    trainingType: input.trainingType,
    chunkSize: input.chunkSize,
    chunkSplitter: input.chunkSplitter,
    qaPrompt: input.qaPrompt,
    metadata: input.metadata,
    tags: input.tags,
  });

  async function fromText(auth: AuthContext, input: ChunkSettings & { datasetId: string; name: string; text: string; parentId?: string | null; metadata?: Record<string, unknown> }) {
    const { dataset } = await ctx.auth.authDataset(auth, input.datasetId, 'write');
    if (!input.text.trim()) throw Errors.missingParams("Invalid field 'text': must not be empty");
    const { items, ...source } = await splitSourceText(input.text, splitOptionsOf(input), { owner: auth.teamId });
    return createWithItems(auth, dataset, { ...base(input), type: 'virtual', name: input.name, ...source }, items, input.qaPrompt);
  }

  async function fromLink(auth: AuthContext, input: ChunkSettings & { datasetId: string; link: string; parentId?: string | null; metadata?: Record<string, unknown> }) {
    const { dataset } = await ctx.auth.authDataset(auth, input.datasetId, 'write');
    if (input.trainingType === 'auto') throw Errors.missingParams("Invalid field 'trainingType': 'auto' is not available for a web link (chunk or qa)");
    const selector = dataset.websiteConfig?.selector || pageSelectorOf(input.metadata);
    const page = await readLinkInTurn(ctx, input.link, selector, auth.teamId);
    if (!page.text) throw Errors.missingParams(`The page ${urlForMessage(input.link)} has no text${selector ? ` under selector '${selector}'` : ''}`);
    const { items, ...source } = await splitSourceText(page.text, splitOptionsOf(input, LINK_OVERLAP_RATIO), { owner: auth.teamId });
    const created = await createWithItems(auth, dataset, { ...base(input), type: 'link', name: input.link, rawLink: input.link, ...source }, items);
    return { collectionId: created.collectionId, results: created.results };
  }

  async function fromFileId(auth: AuthContext, input: ChunkSettings & { datasetId: string; fileId: string; parentId?: string | null; metadata?: Record<string, unknown> }) {
    const { dataset } = await ctx.auth.authDataset(auth, input.datasetId, 'write');
    const { file, buffer } = await readUsableFile(ctx, auth, input.fileId);
    const { items, ...source } = await splitStoredFile(file, buffer, splitOptionsOf(input));
    return createWithItems(
      auth,
      dataset,
      { ...base(input), type: 'file', name: file.filename, fileId: file._id, ...source, metadata: { ...(input.metadata ?? {}), relatedImgId: file._id } },
      items,
      input.qaPrompt,
    );
  }

  async function fromCsv(auth: AuthContext, input: { datasetId: string; fileId: string; parentId?: string | null; metadata?: Record<string, unknown> }) {
    const { dataset } = await ctx.auth.authDataset(auth, input.datasetId, 'write');
    const { file, rows } = await readStoredQa(ctx, auth, input.fileId);
    return createWithItems(
      auth,
      dataset,
      { parentId: input.parentId ?? null, type: 'file', name: file.filename, fileId: file._id, trainingType: 'chunk', chunkSize: 0, metadata: input.metadata },
      rows.map((row, chunkIndex) => ({ ...row, chunkIndex })),
    );
  }

  return { fromText, fromLink, fromFileId, fromCsv, checkImport, insertWithItems, checkParent, insertInTree };
}

export type CollectionImportService = ReturnType<typeof createCollectionImportService>;
