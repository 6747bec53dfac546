import { newId } from '../../../infra/plain-record.js';
import { tokenizeForSearch } from '../../../domain/full-text.js';
import type { DatasetsContext } from '../context.js';
import { withIndexWrite } from '../search/index-writes.js';
import type { VectorRow } from '../search/vector.repo.js';
import type { DataIndex } from './data.repo.js';

export const searchTokens = (q: string, a: string): string[] => [...new Set(tokenizeForSearch(`${q}\n${a}`))];

export const newVectorId = newId;

export interface Owner {
  teamId: string;
  datasetId: string;
  collectionId: string;
  dataId: string;
}

/** Embeds texts with the model as vector rows of `owner` under the given ids (stored by the caller, inside its index write). */
export async function embedRows(ctx: DatasetsContext, model: string, owner: Owner, entries: { id: string; text: string }[]): Promise<{ rows: VectorRow[]; tokens: number }> {
  if (entries.length === 0) return { rows: [], tokens: 0 };
  const { vectors, tokens } = await ctx.embedders().forModel(model).embed(entries.map((entry) => entry.text), 'db');
  return { rows: entries.map((entry, i) => ({ ...owner, id: entry.id, model, vector: vectors[i] ?? [] })), tokens };
}

/** Stores vectors under fresh ids (insert; an id written by an earlier attempt is kept), through the `ctx` of an index write (withIndexWrite). */
export async function storeVectors(ctx: DatasetsContext, rows: VectorRow[]): Promise<void> {
  if (rows.some((row) => row.vector.length === 0)) throw new Error('The embedding provider returned fewer vectors than texts');
  await ctx.repos.vectors.insertNew(rows);
  await ctx.searchIndex.addVectors(rows);
}

/** Through the `ctx` of an index write (withIndexWrite). */
export async function removeVectors(ctx: DatasetsContext, teamId: string, datasetId: string, ids: string[]): Promise<void> {
  await ctx.repos.vectors.deleteByIds(teamId, ids);
  await ctx.searchIndex.removeVectors(datasetId, ids);
}

/** Embedding tokens a write used, of a model (the caller bills them). */
export interface EmbeddingUse {
  model: string;
  tokens: number;
}

/**
 * Inside an index write (through its `ctx`): `rows`, embedded with the model the writer read
 * before taking the lock, as they are to be stored. A rebuild flags the items and switches the
 * model under the same lock, so rows embedded before a switch that took the lock first would stay
 * on a model the dataset no longer searches and no rebuild flags: they are embedded again with
 * the current one (`texts`, one per row). `reembedded`: what that cost, when it happened.
 */
export async function onCurrentModel(
  ctx: DatasetsContext,
  owner: { teamId: string; datasetId: string },
  rows: VectorRow[],
  texts: string[],
  signal?: AbortSignal,
): Promise<{ rows: VectorRow[]; reembedded?: EmbeddingUse }> {
  if (rows.length === 0) return { rows };
  const current = await ctx.repos.datasets.vectorModelOf(owner.teamId, owner.datasetId);
  // A deleted dataset: the writer's check after writing removes what it wrote.
  if (!current || rows.every((row) => row.model === current)) return { rows };
  const { vectors, tokens } = await ctx.embedders().forModel(current).embed(texts, 'db', signal);
  return { rows: rows.map((row, i) => ({ ...row, model: current, vector: vectors[i] ?? [] })), reembedded: { model: current, tokens } };
}

/**
 * Inserts one data item now (data/insertData): embedded, then, as one index write, checked
 * against identical items of the collection (inside the lock, so that parallel identical inserts
 * store one), its vectors and the item that points to them. Null when an identical item exists.
 */
export async function insertDataNow(
  ctx: DatasetsContext,
  input: { teamId: string; tmbId: string; datasetId: string; collectionId: string; model: string; q: string; a: string; chunkIndex: number; indexes: { text: string; defaultIndex: boolean }[] },
): Promise<{ dataId: string; used: EmbeddingUse[] } | null> {
  const dataId = newId();
  const indexes: DataIndex[] = input.indexes.map((index) => ({ ...index, dataId: newVectorId() }));
  const texts = indexes.map((index) => index.text);
  const embedded = await embedRows(
    ctx,
    input.model,
    { teamId: input.teamId, datasetId: input.datasetId, collectionId: input.collectionId, dataId },
    indexes.map((index) => ({ id: index.dataId, text: index.text })),
  );
  const item = {
    _id: dataId,
    teamId: input.teamId,
    tmbId: input.tmbId,
    datasetId: input.datasetId,
    collectionId: input.collectionId,
    q: input.q,
    a: input.a,
    chunkIndex: input.chunkIndex,
    indexes,
    fullTextTokens: searchTokens(input.q, input.a),
  };
  const used = [{ model: input.model, tokens: embedded.tokens }];
  const intent = { teamId: input.teamId, items: [dataId], vectors: embedded.rows.map((row) => row.id) };
  return withIndexWrite(ctx, input.datasetId, intent, async (ctx) => {
    const [duplicate, { rows, reembedded }] = await Promise.all([
      ctx.repos.data.sameExists(input.teamId, input.collectionId, input.q, input.a),
      onCurrentModel(ctx, input, embedded.rows, texts),
    ]);
    if (duplicate) return null;
    await storeVectors(ctx, rows);
    await ctx.repos.data.insertNew([item]);
    await ctx.searchIndex.putItems([item]);
    return { dataId, used: reembedded ? [...used, reembedded] : used };
  });
}
