import { folderBreadcrumb } from '../../../domain/folder-breadcrumb.js';
import { Errors } from '../../../infra/errors.js';
import { urlForMessage } from '../../../infra/join-url.js';
import type { AuthContext } from '../../auth/types.js';
import { deleteCollectionsCascade } from '../cascade.js';
import type { DatasetsContext } from '../context.js';
import { fileReadUrl, signFileToken } from '../files/file-token.js';
import { splitSourceText } from '../files/large-text.js';
import type { CollectionListFilter, CollectionRecord, NewCollection } from './collection.repo.js';
import { usableChunkSize } from './collection.schema.js';
import { type CollectionImportService, LINK_OVERLAP_RATIO } from './collection-import.service.js';
import { findUsableFile, hashText, pageSelectorOf, readLinkInTurn } from './collection-sources.js';
import { splitOptionsOf } from './source-text.js';

const MANUAL_NAME = /^(手动|manual$|mark$)/;
const PINNED_TIME = new Date('2999-09-09T00:00:00Z');

export function createCollectionService(ctx: DatasetsContext, importer: CollectionImportService) {
  const { collections, trainings } = ctx.repos;

  const sourceIdOf = (collection: CollectionRecord) => collection.fileId ?? collection.rawLink ?? collection.externalFileId ?? collection.externalFileUrl;

  async function create(auth: AuthContext, input: Omit<NewCollection, 'teamId' | 'tmbId' | 'parentId'> & { parentId?: string | null }) {
    const { dataset } = await ctx.auth.authDataset(auth, input.datasetId, 'write');
    if (dataset.type === 'folder') throw Errors.missingParams(`Dataset ${dataset._id} is a folder; collections belong to datasets`);
    // A collection's file is read through it and deleted with it: only a file the caller may use.
    if (input.fileId) await findUsableFile(ctx, auth, input.fileId);
    await importer.checkParent(auth, dataset._id, input.parentId);
    return importer.insertInTree(auth, { ...input, parentId: input.parentId ?? null, datasetId: dataset._id });
  }

  async function listItems(auth: AuthContext, filter: CollectionListFilter & { simple?: boolean }, page?: { skip: number; limit: number }) {
    const { dataset, permission } = await ctx.auth.authDataset(auth, filter.datasetId, 'read');
    const { items, total } = await collections.list(auth.teamId, filter, page);
    const ids = items.map((item) => item._id);
    // An empty page has nothing to count: no command for it. Data amounts come from the dataset's
    // search index, which holds every item (see countItems).
    const [dataCounts, trainingCounts] = filter.simple || ids.length === 0
      ? [new Map<string, number>(), new Map<string, number>()]
      : await Promise.all([ctx.searchIndex.countItems(dataset._id, dataset.vectorModel, ids), trainings.countedByCollection(auth.teamId, dataset._id)]);
    if (ids.some((id) => trainingCounts.has(id))) ctx.wakeWorker();
    const shaped = items.map((item) => ({
      _id: item._id,
      parentId: item.parentId,
      tmbId: item.tmbId,
      name: item.name,
      type: item.type,
      forbid: item.forbid,
      createTime: item.createTime,
      updateTime: item.updateTime,
      trainingType: item.trainingType,
      fileId: item.fileId,
      rawLink: item.rawLink,
      tags: item.tags,
      dataAmount: dataCounts.get(item._id) ?? 0,
      trainingAmount: trainingCounts.get(item._id) ?? 0,
      permission,
    }));
    return { list: shaped, total };
  }

  async function detail(auth: AuthContext, id: string) {
    const { collection, dataset, permission } = await ctx.auth.authCollection(auth, id, 'read');
    const file = collection.fileId ? await ctx.repos.files.find('dataset', collection.fileId) : null;
    return { ...collection, datasetId: dataset, sourceName: collection.name, sourceId: sourceIdOf(collection), permission, file: file ?? undefined };
  }

  async function paths(auth: AuthContext, parentId: string | null | undefined) {
    if (!parentId) return [];
    const { collection } = await ctx.auth.authCollection(auth, parentId, 'read');
    return folderBreadcrumb(collection, (id) => collections.findById(auth.teamId, id));
  }

  async function read(auth: AuthContext, collectionId: string) {
    const { collection, dataset } = await ctx.auth.authCollection(auth, collectionId, 'read');
    if (collection.type === 'file' && collection.fileId) {
      const token = signFileToken(ctx.config.FILE_TOKEN_KEY, { bucketName: 'dataset', teamId: auth.teamId, tmbId: auth.tmbId, fileId: collection.fileId });
      return { type: 'url' as const, value: fileReadUrl(token) };
    }
    if (collection.type === 'link' && collection.rawLink) return { type: 'url' as const, value: collection.rawLink };
    if (collection.type === 'externalFile') {
      // The id fills the placeholder as it is, as the reference (a function replacer: `$'` or `$&` in an id stays text).
      const fileId = collection.externalFileId;
      const value = dataset.externalReadUrl && fileId ? dataset.externalReadUrl.replace('{{fileId}}', () => fileId) : (collection.externalFileUrl ?? '');
      return { type: 'url' as const, value };
    }
    return { type: 'url' as const, value: '' };
  }

  /**
   * A move changes where a collection sits, so it needs manage (collections take their
   * dataset's permission: manage on the dataset covers the moved item and the target folder);
   * renaming, tagging and forbidding need write. Checked before anything is written.
   */
  async function update(auth: AuthContext, input: { id: string; parentId?: string | null; name?: string; tags?: string[]; forbid?: boolean }) {
    const { collection, permission } = await ctx.auth.authCollection(auth, input.id, 'write');
    const moving = input.parentId !== undefined && input.parentId !== collection.parentId;
    if (moving && !permission.hasManagePer) {
      throw Errors.unAuthDataset(`manage permission on dataset ${collection.datasetId} is required to move collection ${collection._id}`);
    }
    if (moving) await move(auth, collection, input.parentId ?? null);
    const patch = {
      ...(input.name ? { name: input.name, updateTime: MANUAL_NAME.test(input.name) ? PINNED_TIME : new Date() } : {}),
      ...(input.tags ? { tags: input.tags } : {}),
      ...(input.forbid !== undefined ? { forbid: input.forbid } : {}),
    };
    if (Object.keys(patch).length > 0) await collections.update(auth.teamId, collection._id, patch);
    if (input.forbid !== undefined && collection.type === 'folder') {
      const subtree = await collections.withDescendants(auth.teamId, collection._id);
      await collections.setForbid(auth.teamId, subtree.map((item) => item._id), input.forbid);
    }
    await ctx.searchIndex.collectionsChanged(collection.datasetId);
    return null;
  }

  /** Under the collection-tree lock: the target still exists, is a folder of the dataset, and is not inside the moved subtree. */
  async function move(auth: AuthContext, collection: CollectionRecord, parentId: string | null) {
    await ctx.withCollectionTree(collection.datasetId, async (lock) => {
      const subtree = await collections.withDescendants(auth.teamId, collection._id);
      if (subtree.length === 0) throw Errors.collectionNotFound(collection._id);
      if (parentId !== null) {
        await importer.checkParent(auth, collection.datasetId, parentId);
        if (subtree.some((item) => item._id === parentId)) throw Errors.missingParams("Invalid field 'parentId': cannot move a collection into itself or its subfolder");
      }
      lock.assertHeld();
      await collections.update(auth.teamId, collection._id, { parentId });
    });
  }

  async function remove(auth: AuthContext, id: string) {
    const { collection } = await ctx.auth.authCollection(auth, id, 'write');
    // Under the lock nothing is created or moved into the subtree while it goes.
    await ctx.withCollectionTree(collection.datasetId, async (lock) =>
      deleteCollectionsCascade(ctx, auth.teamId, await collections.withDescendants(auth.teamId, collection._id), lock),
    );
    return null;
  }

  /** Re-fetches a link collection: 'sameRaw' when unchanged, else a new collection replaces it. */
  async function syncLink(auth: AuthContext, collectionId: string) {
    const { collection, dataset } = await ctx.auth.authCollection(auth, collectionId, 'write');
    if (collection.type !== 'link' || !collection.rawLink) throw Errors.unLinkCollection(`Collection ${collectionId} is not a link collection`);
    const selector = dataset.websiteConfig?.selector || pageSelectorOf(collection.metadata);
    const page = await readLinkInTurn(ctx, collection.rawLink, selector, auth.teamId);
    if (!page.text) throw Errors.missingParams(`The page ${urlForMessage(collection.rawLink)} returned no text; the collection was kept`);
    const hash = hashText(page.text);
    if (hash === collection.hashRawText) return 'sameRaw';
    const settings = { chunkSize: usableChunkSize(collection.chunkSize), trainingType: collection.trainingType, chunkSplitter: collection.chunkSplitter };
    const { items: chunks } = await splitSourceText(page.text, splitOptionsOf(settings, LINK_OVERLAP_RATIO), { owner: auth.teamId });
    // Under the collection's sync lock: two syncs at once would each find no replacement and
    // each import one (every chunk twice); the second now finds the first one's. A sync that
    // lost the lock (stalled past its lease) stops before its next write: before the import, the
    // new holder syncs; after it, a retry finds the replacement and removes the old collection.
    // The replacement keeps its import intent (naming the old one) until the old one is deleted:
    // a sync killed before all its items were queued leaves a partial replacement the import
    // sweep takes back (never found here, so the whole old one stays); one killed after leaves a
    // whole one, for which the sweep deletes the old one (collection-imports.ts).
    return ctx.withLinkSync(collection._id, async (lock) => {
      // A sync that ran meanwhile, or one whose old collection could not be removed, left the replacement: finish that one.
      const replacement = await collections.findLinkReplacement(auth.teamId, collection, hash);
      if (replacement) {
        await deleteCollectionsCascade(ctx, auth.teamId, [collection], lock);
        await collections.endImport(replacement._id, false);
        return 'success';
      }
      // Replaced meanwhile by a sync that read another version of the page, or deleted.
      if (!(await collections.findById(auth.teamId, collection._id))) throw Errors.collectionNotFound(collection._id);
      // A sync the import would refuse (dataset size, model) does not use up the sync interval.
      await importer.checkImport(auth, dataset, collection, chunks);
      lock.assertHeld();
      await ctx.teamLimits.assertAndRecordWebSync(auth.teamId);
      // The replacement is complete before the old collection goes, so a failure keeps the old one.
      const { collectionId: replacementId } = await importer.insertWithItems(
        auth,
        dataset,
        {
          // The replacement is still the original creator's collection (as the reference).
          tmbId: collection.tmbId,
          parentId: collection.parentId,
          type: 'link',
          name: collection.name,
          rawLink: collection.rawLink,
          trainingType: collection.trainingType,
          chunkSize: collection.chunkSize,
          // Kept, so the next sync splits the page as this one did.
          chunkSplitter: collection.chunkSplitter,
          metadata: collection.metadata,
          hashRawText: hash,
          rawTextLength: page.text.length,
          createTime: collection.createTime,
        },
        chunks,
        undefined,
        collection._id,
      );
      await deleteCollectionsCascade(ctx, auth.teamId, [collection], lock);
      await collections.endImport(replacementId, false);
      return 'success';
    });
  }

  return { create, listItems, detail, paths, read, update, remove, syncLink };
}

export type CollectionService = ReturnType<typeof createCollectionService>;
