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

/** Inserts one data item now (data/insertData): embedded, then vectors and the item that points to them, as one index write. */
export async function insertDataNow(
  ctx: DatasetsContext,
  input: { teamId: string; tmbId: string; datasetId: string; collectionId: string; model: string; q: string; a: string; chunkIndex: number; indexes: { text: string; defaultIndex: boolean }[] },
): Promise<{ dataId: string; tokens: number }> {
  const dataId = newId();
  const indexes: DataIndex[] = input.indexes.map((index) => ({ ...index, dataId: newVectorId() }));
  const { rows, tokens } = await embedRows(
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
  await withIndexWrite(ctx, input.datasetId, { teamId: input.teamId, items: [dataId], vectors: rows.map((row) => row.id) }, async (ctx) => {
    await storeVectors(ctx, rows);
    await ctx.repos.data.insertNew([item]);
    await ctx.searchIndex.putItems([item]);
  });
  return { dataId, tokens };
}
