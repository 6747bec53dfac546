import { tokenizeForSearch } from '../../../domain/full-text.js';
import { reciprocalRankFusion } from '../../../domain/rank-fusion.js';
import { countTokens } from '../../../domain/token-count.js';
import { rerank } from '../../../infra/rerank.js';
import type { DatasetsContext } from '../context.js';
import { uniqueBy } from '../../../domain/unique-by.js';
import { usagePoints } from '../../../domain/usage-points.js';
import { MAX_SEARCH_QUERIES } from '../../../domain/workflow/prompts.js';
import { type DatasetEntry, forbiddenCollections, fullTextSearchIn, type IndexedItem, type PreparedDataset, vectorSearchIn } from './dataset-entry.js';

export const SEARCH_MODES = ['embedding', 'fullTextRecall', 'mixedRecall'] as const;
export type SearchMode = (typeof SEARCH_MODES)[number];
export type ScoreType = 'embedding' | 'fullText' | 'reRank' | 'rrf';

export interface SearchResultItem {
  id: string;
  q: string;
  a: string;
  chunkIndex: number;
  datasetId: string;
  collectionId: string;
  sourceId?: string;
  sourceName: string;
  score: { type: ScoreType; value: number; index: number }[];
}

export interface SearchParams {
  teamId: string;
  datasetIds: string[];
  vectorModel: string;
  /** The question and its rewrites (at most MAX_SEARCH_QUERIES are searched). */
  queries: string[];
  /** Token budget of the returned items. */
  limit: number;
  similarity: number;
  searchMode: SearchMode;
  usingReRank: boolean;
  rerankModel?: string;
  /**
   * Ends the search (a chat turn whose client hung up): the query embedding's request is cut
   * (its connection closed), and no step after it runs.
   */
  signal?: AbortSignal;
}

/** What a search cost, as usage records list it. */
export interface SearchUsage {
  moduleName: 'Dataset search';
  totalPoints: number;
  model: string;
  tokens: number;
}

export interface SearchOutcome {
  list: SearchResultItem[];
  tokens: number;
  searchMode: SearchMode;
  limit: number;
  similarity: number;
  usingReRank: boolean;
  usingSimilarityFilter: boolean;
}

const RECALL: Record<SearchMode, { embedding: number; fullText: number }> = {
  embedding: { embedding: 100, fullText: 0 },
  fullTextRecall: { embedding: 0, fullText: 100 },
  mixedRecall: { embedding: 80, fullText: 60 },
};

type Scored = { data: IndexedItem; score: SearchResultItem['score'] };

/**
 * Hands the event loop back between the queries of a search: each query scans the in-process
 * indexes synchronously (up to ~1 s for a long query over a large dataset), and a search runs
 * up to MAX_SEARCH_QUERIES of them.
 */
export const betweenQueries = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Dataset search (searchDatasetData): each query recalled from the in-process vector index and
 * by stored tokens + BM25 over the in-process inverted index (no `$text`: FerretDB has none), the
 * queries' lists of one kind merged by RRF, the recalled items reranked once with the queries
 * joined, all lists fused by RRF, then the similarity filter and a token budget. The one search
 * of searchTest and the workflow's search node.
 */
export function createSearchService(ctx: DatasetsContext) {
  async function embeddingRecall(params: SearchParams, queries: string[], entries: DatasetEntry[], forbidden: Set<string>, k: number) {
    const embedder = ctx.embedders().forModel(params.vectorModel);
    // One provider call for every query; the tokens are theirs together.
    const { vectors, tokens } = await embedder.embed(queries, 'query', params.signal);
    const lists: Scored[][] = [];
    for (const [i] of queries.entries()) {
      if (i > 0) await betweenQueries();
      params.signal?.throwIfAborted();
      lists.push(vectorSearchIn(entries, vectors[i] ?? [], k, forbidden).map((hit, index): Scored => ({ data: hit.item, score: [{ type: 'embedding', value: hit.score, index }] })));
    }
    return { list: fuse(lists.map((items) => ({ items, k: 60 }))), tokens };
  }

  async function fullTextRecall(queries: string[], entries: DatasetEntry[], forbidden: Set<string>, k: number, signal?: AbortSignal): Promise<Scored[]> {
    const lists: Scored[][] = [];
    for (const query of queries) {
      // Also after the embedding recall's last query.
      await betweenQueries();
      signal?.throwIfAborted();
      const queryTokens = [...new Set(tokenizeForSearch(query))];
      if (queryTokens.length === 0) {
        lists.push([]);
        continue;
      }
      lists.push(fullTextSearchIn(entries, queryTokens, k, forbidden).map((hit, index): Scored => ({ data: hit.item, score: [{ type: 'fullText', value: hit.score, index }] })));
    }
    return fuse(lists.map((items) => ({ items, k: 60 })));
  }

  async function applyRerank(params: SearchParams, query: string, items: Scored[]): Promise<Scored[]> {
    const model = ctx.models.getReRankModel(params.rerankModel) ?? ctx.models.catalog.reRankModels[0];
    if (!model || items.length === 0) return [];
    try {
      const documents = items.map((item) => ({ id: item.data._id, text: `${item.data.q}\n${item.data.a}` }));
      const ranked = await rerank(model, query, documents, { baseUrl: ctx.config.OPENAI_BASE_URL, apiKey: ctx.config.CHAT_API_KEY, timeoutMs: 30_000 });
      return ranked
        .filter((entry) => items[entry.index])
        .map((entry, index) => ({ data: items[entry.index]!.data, score: [{ type: 'reRank' as const, value: entry.score, index }] }));
    } catch (error) {
      ctx.log.warn({ error: (error as Error).message }, 'rerank failed; results without rerank');
      return [];
    }
  }

  async function search(params: SearchParams): Promise<SearchOutcome> {
    // Callers cap their lists already; this is the last line before the fan-out.
    const queries = params.queries.slice(0, MAX_SEARCH_QUERIES);
    if (queries.length === 0) throw new Error('search needs a query');
    const recall = RECALL[params.searchMode];
    // The datasets' indexes, up to date with every process's writes, and their collections (cached).
    const prepared = await ctx.searchIndex.prepare(params.teamId, params.datasetIds, params.vectorModel);
    params.signal?.throwIfAborted();
    const entries = prepared.map((dataset) => dataset.entry);
    const forbidden = forbiddenCollections(prepared);
    const embedded = recall.embedding > 0 ? await embeddingRecall(params, queries, entries, forbidden, recall.embedding) : { list: [] as Scored[], tokens: 0 };
    const fullText = recall.fullText > 0 ? await fullTextRecall(queries, entries, forbidden, recall.fullText, params.signal) : [];
    let reranked: Scored[] = [];
    // The rerank call takes no signal (rerank.ts): an ended search does not start it.
    params.signal?.throwIfAborted();
    if (params.usingReRank) {
      // The rerank model sees each text once (by id, then by its letters and digits), and the queries joined, once.
      const union = uniqueBy(uniqueBy([...embedded.list, ...fullText], (item) => item.data._id), sameText);
      reranked = await applyRerank(params, queries.join('\n'), union);
    }
    const usingReRank = reranked.length > 0;
    let merged = fuse([
      { items: embedded.list, k: 60 },
      { items: fullText, k: 60 },
      { items: reranked, k: 58 },
    ]);
    merged = uniqueBy(merged, sameText);
    const filterType: ScoreType | undefined = usingReRank ? 'reRank' : params.searchMode === 'embedding' ? 'embedding' : undefined;
    if (filterType) merged = merged.filter((item) => (item.score.find((s) => s.type === filterType)?.value ?? 0) >= params.similarity);
    const budgeted = withinBudget(merged, params.limit);
    return {
      list: await toResultItems(params.teamId, prepared, budgeted),
      tokens: embedded.tokens,
      searchMode: params.searchMode,
      limit: params.limit,
      similarity: params.similarity,
      usingReRank,
      usingSimilarityFilter: filterType !== undefined,
    };
  }

  async function toResultItems(teamId: string, prepared: PreparedDataset[], items: Scored[]): Promise<SearchResultItem[]> {
    const owners = await ctx.searchIndex.collectionInfo(teamId, prepared, [...new Set(items.map((item) => item.data.collectionId))]);
    return items.map(({ data: doc, score }) => {
      const collection = owners.get(doc.collectionId);
      return {
        id: doc._id,
        q: doc.q,
        a: doc.a,
        chunkIndex: doc.chunkIndex,
        datasetId: doc.datasetId,
        collectionId: doc.collectionId,
        sourceId: collection?.sourceId,
        sourceName: collection?.name ?? '',
        score,
      };
    });
  }

  /** A search with the usage line its query embeddings cost, at the vector model's price. */
  async function searchPriced(params: SearchParams): Promise<SearchOutcome & { usage: SearchUsage }> {
    const outcome = await search(params);
    const model = ctx.models.getVectorModel(params.vectorModel);
    const usage: SearchUsage = { moduleName: 'Dataset search', totalPoints: usagePoints(model, outcome.tokens), model: model?.name ?? params.vectorModel, tokens: outcome.tokens };
    return { ...outcome, usage };
  }

  return { searchPriced };
}

/**
 * RRF over the non-empty lists (the reference's datasetSearchResultConcat): an item in several
 * lists keeps the best score of each kind, and every fused item gets an `rrf` score. A single list
 * is returned as it is (no rrf entry), as the reference does.
 */
function fuse(lists: { items: Scored[]; k: number }[]): Scored[] {
  const nonEmpty = lists.filter((list) => list.items.length > 0);
  if (nonEmpty.length <= 1) return nonEmpty[0]?.items ?? [];
  const byId = new Map<string, Scored>();
  for (const list of nonEmpty) {
    for (const item of list.items) {
      const existing = byId.get(item.data._id);
      if (!existing) {
        byId.set(item.data._id, { data: item.data, score: item.score.map((score) => ({ ...score })) });
        continue;
      }
      for (const score of item.score) {
        const same = existing.score.find((kept) => kept.type === score.type);
        if (same) same.value = Math.max(same.value, score.value);
        else existing.score.push({ ...score });
      }
    }
  }
  const fused = reciprocalRankFusion(
    nonEmpty.map((list) => list.items.map((item) => ({ id: item.data._id }))),
    nonEmpty.map((list) => list.k),
  );
  return fused.map((entry, index) => {
    const item = byId.get(entry.id)!;
    return { data: item.data, score: [...item.score, { type: 'rrf' as const, value: entry.score, index }] };
  });
}

/** Items whose q and a agree in their letters and digits are one text (the reference's dedupe hash). */
const sameText = (item: { data: { q: string; a: string } }) => `${item.data.q}${item.data.a}`.replace(/[^\p{L}\p{N}]/gu, '');

/** Keeps items while their q+a tokens stay within the budget (limit + 500 slack, as the reference). */
export function withinBudget<T extends { data: { q: string; a: string } }>(items: T[], limit: number): T[] {
  const out: T[] = [];
  let total = 0;
  for (const item of items) {
    const tokens = countTokens(item.data.q + item.data.a);
    if (total + tokens > limit + 500) break;
    out.push(item);
    total += tokens;
    if (total >= limit) break;
  }
  return out.length === 0 && items[0] ? [items[0]] : out;
}

export type SearchService = ReturnType<typeof createSearchService>;
