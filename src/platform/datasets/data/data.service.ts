import { describeError } from '../../../infra/database-errors.js';
import { Errors, isAppError } from '../../../infra/errors.js';
import type { AuthContext } from '../../auth/types.js';
import type { VectorModel } from '../../../domain/models.js';
import type { TrainingMode } from '../collections/collection.repo.js';
import type { DatasetsContext } from '../context.js';
import { removeWritesOfDeletedOwners } from '../training/deleted-datasets.js';
import { TRAINING_BATCH_CHARS, trainingChars } from '../training/training-records.js';
import { overTokenLimit, type PushItem, predictVectors, pushToTrainingQueue } from '../training/enqueue.js';
import { buildIndexes, type IndexInput, indexIdOf, planIndexUpdate, simpleText } from './data-indexes.js';
import { withIndexWrite } from '../search/index-writes.js';
import type { VectorRow } from '../search/vector.repo.js';
import type { DataRecord } from './data.repo.js';
import { type EmbeddingUse, embedRows, insertDataNow, newVectorId, onCurrentModel, removeVectors, searchTokens, storeVectors } from './data-writer.js';
import { usagePoints } from '../../../domain/usage-points.js';

/** Tries of an update whose item other writes keep changing between its read and its write. */
const UPDATE_TRIES = 4;

/**
 * What an update's tries share: the vector model they embed with, what they embedded already (by
 * text) and the embedding use billed once a try is written.
 */
interface UpdateState {
  model: VectorModel;
  embedded: Map<string, VectorRow>;
  used: EmbeddingUse[];
}

interface UpdateInput {
  dataId: string;
  q?: string;
  a?: string;
  indexes?: IndexInput[];
}

export function createDataService(ctx: DatasetsContext) {
  const { data } = ctx.repos;

  /** A client naming a dataset must name the collection's own dataset. */
  function assertSameDataset(collection: { _id: string; datasetId: string }, datasetId?: string) {
    if (datasetId && datasetId !== collection.datasetId) {
      throw Errors.missingParams(`Invalid field 'collectionId': collection ${collection._id} does not belong to dataset ${datasetId}`);
    }
  }

  /** The vectors a data write embedded now (not through the queue), billed as the reference's vector usage. */
  async function chargeEmbedding(auth: AuthContext, { model: name, tokens }: EmbeddingUse) {
    const model = ctx.embedders().vectorModel(name);
    await ctx.chargeUsage(auth, { appName: 'Data index', list: [{ moduleName: 'Embeddings', totalPoints: usagePoints(model, tokens), model: model.name, tokens }] });
  }

  async function pushData(auth: AuthContext, input: { collectionId: string; datasetId?: string; data: PushItem[]; trainingMode: TrainingMode; prompt?: string; billId?: string }) {
    const { dataset, collection } = await ctx.auth.authCollection(auth, input.collectionId, 'write');
    assertSameDataset(collection, input.datasetId);
    // Sized by the mode the items are queued in (a Q/A push into a chunk collection makes Q/A pairs).
    await ctx.teamLimits.assertDatasetSize(auth.teamId, await predictVectors(input.data, input.trainingMode));
    return pushToTrainingQueue(ctx, {
      teamId: auth.teamId,
      tmbId: auth.tmbId,
      dataset,
      collectionId: collection._id,
      mode: input.trainingMode,
      prompt: input.prompt,
      billId: input.billId,
      items: input.data,
    });
  }

  /**
   * A text is embedded whole: one longer than the vector model takes is the caller's to shorten
   * (400 naming the field), not the provider's to refuse (a 502 after the request was accepted).
   */
  function assertEmbeddable(model: VectorModel, text: string, field: string): void {
    if (overTokenLimit(text, model.maxToken)) throw Errors.missingParams(`Invalid field '${field}': longer than the ${model.maxToken} tokens the vector model accepts`);
  }

  async function insertData(auth: AuthContext, input: { collectionId: string; datasetId?: string; q: string; a?: string; indexes?: IndexInput[] }) {
    const { dataset, collection } = await ctx.auth.authCollection(auth, input.collectionId, 'write');
    assertSameDataset(collection, input.datasetId);
    const q = simpleText(input.q);
    const a = simpleText(input.a ?? '');
    if (!q) throw Errors.missingParams("Invalid field 'q': must not be empty");
    const model = ctx.embedders().vectorModel(dataset.vectorModel);
    assertEmbeddable(model, q + a, 'q');
    const indexes = buildIndexes(q, a, input.indexes);
    for (const index of indexes) if (!index.defaultIndex) assertEmbeddable(model, index.text, 'indexes');
    // As a pushed item is counted (enqueue.ts: q, a and the custom indexes): no more text than one training batch embeds.
    if (trainingChars({ q, a, indexes: input.indexes ?? [] }) > TRAINING_BATCH_CHARS) {
      throw Errors.missingParams(`Invalid field 'indexes': more than the ${TRAINING_BATCH_CHARS} characters one item may have embedded`);
    }
    await ctx.teamLimits.assertDatasetSize(auth.teamId, indexes.length);
    const owner = { teamId: auth.teamId, datasetId: dataset._id, collectionId: collection._id };
    const inserted = await insertDataNow(ctx, { ...owner, tmbId: auth.tmbId, model: model.model, q, a, chunkIndex: 0, indexes });
    if (!inserted) throw Errors.conflict('An identical data item already exists in this collection');
    try {
      // Billed once the item stands: an insert into a dataset deleted meanwhile answers an error, unbilled.
      await assertOwnersAfterWrite(owner);
      for (const use of inserted.used) await chargeEmbedding(auth, use);
    } catch (error) {
      // The insert answers an error, so its item goes (its owners' check removed it already when
      // they are gone): kept, it would make the client's retry a 409 for an item whose id it never saw.
      if (!isAppError(error)) {
        await removeItem(auth.teamId, dataset._id, inserted.dataId).catch((undo: unknown) => ctx.log.warn(`data ${inserted.dataId} inserted before a failure and kept: ${describeError(undo)}`));
      }
      throw error;
    }
    return inserted.dataId;
  }

  /**
   * The dataset or collection may have been deleted since it was authorised: checked after the
   * write, as the training worker does, so that this check or the delete's cascade removes it.
   */
  async function assertOwnersAfterWrite(owner: { teamId: string; datasetId: string; collectionId: string }) {
    const gone = await removeWritesOfDeletedOwners(ctx, [owner]);
    if (gone.datasets.size > 0) throw Errors.unExistDataset(`Dataset ${owner.datasetId} was deleted while the data was written`);
    if (gone.collections.size > 0) throw Errors.collectionNotFound(owner.collectionId);
  }

  async function list(auth: AuthContext, input: { collectionId: string; searchText?: string; skip: number; limit: number }) {
    const { collection } = await ctx.auth.authCollection(auth, input.collectionId, 'read');
    const page = { skip: input.skip, limit: input.limit };
    const { items, total } =
      (await ctx.dataList.page(auth.teamId, collection, { ...page, searchText: input.searchText })) ??
      (await data.list({ teamId: auth.teamId, datasetId: collection.datasetId, collectionId: collection._id }, input.searchText, page));
    return { items: items.map((item) => ({ _id: item._id, datasetId: collection.datasetId, collectionId: collection._id, q: item.q, a: item.a, chunkIndex: item.chunkIndex })), total };
  }

  async function detail(auth: AuthContext, id: string) {
    const { data: item, collection, permission } = await ctx.auth.authData(auth, id, 'read');
    return {
      id: item._id,
      teamId: item.teamId,
      q: item.q,
      a: item.a,
      chunkIndex: item.chunkIndex,
      indexes: item.indexes.map((index) => ({ _id: indexIdOf(item._id, index.dataId), defaultIndex: index.defaultIndex, dataId: index.dataId, text: index.text })),
      datasetId: item.datasetId,
      collectionId: item.collectionId,
      sourceName: collection.name,
      sourceId: collection.fileId ?? collection.rawLink,
      source: collection.name,
      isOwner: item.tmbId === auth.tmbId,
      canWrite: permission.hasWritePer,
    };
  }

  /**
   * Re-embeds only the indexes whose text changed; new vectors are stored before the item points
   * to them. Planned from the item as read, and written only while it is unchanged: a write in
   * between (another update, a rebuild) makes it plan again from what is stored, as if it had come
   * second, up to UPDATE_TRIES times, then 409. The writes are one index write (index-writes.ts):
   * an item deleted meanwhile is not put back in the search index, and its new vectors go again.
   */
  async function update(auth: AuthContext, input: UpdateInput) {
    const { data: read, dataset } = await ctx.auth.authData(auth, input.dataId, 'write');
    // Nothing given (empty texts count as nothing, as the reference) changes nothing.
    if (!input.q && !input.a && !input.indexes?.length) return null;
    // The model, and texts embedded by an earlier try, so that planning again is not paid for again.
    const state: UpdateState = { model: ctx.embedders().vectorModel(dataset.vectorModel), embedded: new Map(), used: [] };
    let item = read;
    for (let tries = 1; !(await updateFrom(auth, item, input, state)); tries++) {
      const stored = await data.findById(auth.teamId, read._id);
      if (!stored) throw Errors.dataNotFound(read._id);
      if (tries >= UPDATE_TRIES) throw Errors.conflict(`Data ${read._id} kept changing while this update was written; read it again and retry`);
      item = stored;
    }
    await assertOwnersAfterWrite({ teamId: auth.teamId, datasetId: read.datasetId, collectionId: read.collectionId });
    // Billed once written, as the reference bills after its update: an update answering an error
    // (409, 404, a dataset deleted meanwhile) changed nothing and costs the team nothing.
    for (const use of state.used) await chargeEmbedding(auth, use);
    return null;
  }

  /** One try of `update` from `item` as read: false when the item changed or went meanwhile (nothing kept then). */
  async function updateFrom(auth: AuthContext, item: DataRecord, input: UpdateInput, state: UpdateState): Promise<boolean> {
    const { model, embedded } = state;
    // Without q the stored q is kept (the reference would blank the default index).
    const q = simpleText(input.q ?? '') || item.q;
    const a = input.a !== undefined ? simpleText(input.a) : item.a;
    const plan = planIndexUpdate(item.indexes, input.indexes ?? [], q, a);
    for (const entry of plan.embed) assertEmbeddable(model, entry.text, entry.defaultIndex ? 'q' : 'indexes');
    // As inserted items: no more text than one training batch embeds (a rebuild re-embeds the item whole).
    const customIndexes = [...plan.keep, ...plan.embed].filter((index) => !index.defaultIndex);
    if (trainingChars({ q, a, indexes: customIndexes }) > TRAINING_BATCH_CHARS) {
      throw Errors.missingParams(`Invalid field 'indexes': more than the ${TRAINING_BATCH_CHARS} characters one item may have embedded`);
    }
    // Added indexes are stored vectors like any other: the growth (replaced ones go) must fit the plan, checked before paying for embeddings.
    const growth = plan.embed.length - plan.removeVectorIds.length;
    if (growth > 0) await ctx.teamLimits.assertDatasetSize(auth.teamId, growth);
    const missing = [...new Set(plan.embed.map((entry) => entry.text))].filter((text) => !embedded.has(text)).map((text) => ({ id: newVectorId(), text }));
    const { rows: fresh, tokens } = await embedRows(ctx, model.model, { teamId: auth.teamId, datasetId: item.datasetId, collectionId: item.collectionId, dataId: item._id }, missing);
    if (missing.length > 0) state.used.push({ model: model.model, tokens });
    for (const [i, row] of fresh.entries()) embedded.set(missing[i]!.text, row);
    // A fresh vector id per index and try: a lost try's vectors are removed, never shared.
    const created = plan.embed.map((entry) => ({ dataId: newVectorId(), text: entry.text, defaultIndex: entry.defaultIndex }));
    const planned = created.map((entry) => ({ ...embedded.get(entry.text)!, id: entry.dataId }));
    const indexes = [...plan.keep, ...created].sort((x, y) => Number(y.defaultIndex) - Number(x.defaultIndex));
    const fullTextTokens = searchTokens(q, a);
    const intent = { teamId: auth.teamId, items: [item._id], vectors: [...planned.map((row) => row.id), ...plan.removeVectorIds] };
    const texts = created.map((entry) => entry.text);
    const { written, rows, reembedded } = await withIndexWrite(ctx, item.datasetId, intent, async (ctx) => {
      // Indexes kept from before a switch are the rebuild's to re-embed: the item is flagged or queued, or changed since it was read.
      const { rows, reembedded } = await onCurrentModel(ctx, { teamId: auth.teamId, datasetId: item.datasetId }, planned, texts);
      await storeVectors(ctx, rows);
      if (!(await ctx.repos.data.update(auth.teamId, item, { q, a, indexes, fullTextTokens }))) {
        await removeVectors(ctx, auth.teamId, item.datasetId, rows.map((row) => row.id));
        return { written: false, rows, reembedded };
      }
      await ctx.searchIndex.putItems([{ ...item, q, a, fullTextTokens }]);
      await removeVectors(ctx, auth.teamId, item.datasetId, plan.removeVectorIds);
      return { written: true, rows, reembedded };
    });
    if (reembedded) {
      state.used.push(reembedded);
      // Later tries plan with the model the dataset switched to.
      state.model = ctx.embedders().vectorModel(reembedded.model);
      state.embedded = new Map(rows.map((row, i) => [texts[i]!, row]));
    }
    return written;
  }

  async function remove(auth: AuthContext, id: string) {
    const { data: found } = await ctx.auth.authData(auth, id, 'write');
    await removeItem(auth.teamId, found.datasetId, id);
    return 'success';
  }

  /** Deletes a data item with its vectors and search-index entries, as one index write. */
  async function removeItem(teamId: string, datasetId: string, id: string) {
    await withIndexWrite(ctx, datasetId, undefined, async (ctx, intend) => {
      const { data } = ctx.repos;
      // Read again under the lock: an update that finished meanwhile replaced some vectors.
      const item = await data.findById(teamId, id);
      if (!item) return;
      await intend({ teamId, items: [item._id], vectors: item.indexes.map((index) => index.dataId) });
      // The item goes first so search never shows it; its vectors are then unreachable and removed.
      await data.deleteById(teamId, item);
      await ctx.searchIndex.removeItems(item.datasetId, [item._id]);
      await removeVectors(ctx, teamId, item.datasetId, item.indexes.map((index) => index.dataId));
    });
  }

  return { pushData, insertData, list, detail, update, remove };
}

export type DataService = ReturnType<typeof createDataService>;
