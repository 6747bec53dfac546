/**
 * Event-loop turns in the local embedder, between a search's queries and while the embeddings
 * answer is built (report-loop-audit #3, #4, #8): counted with a setImmediate ping, never timed;
 * results compared with what the work gave in one go.
 */
import { describe, expect, it } from 'vitest';
import { lexicalEmbed } from '../../src/domain/lexical-embedding.js';
import { LOCAL_LEXICAL_VECTOR_MODEL } from '../../src/domain/models.js';
import { TextIndex } from '../../src/domain/text-index.js';
import { tokenizeForSearch } from '../../src/domain/full-text.js';
import { createEmbeddingProvider } from '../../src/infra/embeddings.js';
import { DatasetEntry, FULL_TEXT_QUERY_TERMS } from '../../src/platform/datasets/search/dataset-entry.js';
import { createSearchService } from '../../src/platform/datasets/search/search.service.js';
import type { DatasetsContext } from '../../src/platform/datasets/context.js';
import { embeddingsAnswerChunks, float32Base64, normaliseDimensions } from '../../src/platform/openai/openai.service.js';

/** Counts turns of the event loop (setImmediate callbacks) until stopped. */
function loopTurns() {
  let turns = 0;
  let running = true;
  const tick = () => {
    if (!running) return;
    turns += 1;
    setImmediate(tick);
  };
  setImmediate(tick);
  return {
    get turns() {
      return turns;
    },
    stop() {
      running = false;
    },
  };
}

const words = (count: number, prefix = 'word') => Array.from({ length: count }, (_, i) => `${prefix}${i % 997}`).join(' ');

describe('local lexical embedder', () => {
  const provider = createEmbeddingProvider({ model: LOCAL_LEXICAL_VECTOR_MODEL, name: 'Local', defaultToken: 512, maxToken: 3000, provider: 'local-lexical' }, { timeoutMs: 1000 });

  it('hands the loop back between slices of a large batch, vectors unchanged', async () => {
    // 60 texts of ~12 KB: ~720 KB, several slices of ~100 KB.
    const texts = Array.from({ length: 60 }, (_, i) => `${i} ${words(2000)}`);
    const ping = loopTurns();
    const result = await provider.embed(texts, 'db');
    ping.stop();
    expect(ping.turns).toBeGreaterThanOrEqual(5);
    expect(result.vectors).toEqual(texts.map((text) => lexicalEmbed(text)));
  });

  it('a call that was ended stops at the next slice', async () => {
    const controller = new AbortController();
    controller.abort(new Error('hung up'));
    const texts = Array.from({ length: 20 }, () => words(4000));
    await expect(provider.embed(texts, 'db', controller.signal)).rejects.toThrow('hung up');
  });
});

describe('full-text query terms', () => {
  const index = new TextIndex();
  // Term tN is in 600 - 2N documents, spread out: the higher N, the rarer.
  for (let doc = 0; doc < 600; doc++) {
    const tokens = [`d${doc}`];
    for (let term = 0; term < 300; term++) if ((doc * 7919) % 600 < 600 - 2 * term) tokens.push(`t${term}`);
    index.put(`doc${doc}`, tokens);
  }

  it('a query within the cap is scored exactly as without one', () => {
    const query = Array.from({ length: FULL_TEXT_QUERY_TERMS }, (_, i) => `t${(i * 7) % 300}`);
    expect(index.search(query, 50, undefined, FULL_TEXT_QUERY_TERMS)).toEqual(index.search(query, 50));
  });

  it('a longer query keeps only its rarest terms', () => {
    const query = Array.from({ length: 300 }, (_, i) => `t${i}`);
    // The 128 rarest are t172…t299, in query order.
    const rarest = query.slice(300 - FULL_TEXT_QUERY_TERMS);
    expect(index.search(query, 50, undefined, FULL_TEXT_QUERY_TERMS)).toEqual(index.search(rarest, 50));
    expect(index.search(query, 50, undefined, FULL_TEXT_QUERY_TERMS)).not.toEqual(index.search(query, 50));
  });
});

describe('dataset search', () => {
  it('hands the loop back between its queries, results as before', async () => {
    const entry = new DatasetEntry('ds1', LOCAL_LEXICAL_VECTOR_MODEL);
    for (let i = 0; i < 50; i++) {
      const item = { _id: `item${i}`, datasetId: 'ds1', collectionId: 'c1', q: `question ${i} ${words(20, `topic${i % 5}-`)}`, a: `answer ${i}`, chunkIndex: 0 };
      entry.putItem(item);
      entry.putVector({ id: `v${i}`, dataId: item._id, vector: lexicalEmbed(`${item.q}\n${item.a}`) });
    }
    // Each query's scan notes the loop turns seen so far.
    const ping = loopTurns();
    const seenAt: number[] = [];
    const fullTextSearch = entry.fullTextSearch.bind(entry);
    const vectorSearch = entry.vectorSearch.bind(entry);
    entry.fullTextSearch = (...args) => {
      seenAt.push(ping.turns);
      return fullTextSearch(...args);
    };
    entry.vectorSearch = (...args) => {
      seenAt.push(ping.turns);
      return vectorSearch(...args);
    };
    const embedder = createEmbeddingProvider({ model: LOCAL_LEXICAL_VECTOR_MODEL, name: 'Local', defaultToken: 512, maxToken: 3000, provider: 'local-lexical' }, { timeoutMs: 1000 });
    const ctx = {
      searchIndex: {
        prepare: async () => [{ entry, collections: new Map([['c1', { _id: 'c1', name: 'Collection', forbid: false }]]) }],
        collectionInfo: async () => new Map([['c1', { _id: 'c1', name: 'Collection' }]]),
      },
      embedders: () => ({ forModel: () => embedder }),
      models: { getVectorModel: () => undefined, getReRankModel: () => undefined, catalog: { reRankModels: [] } },
      log: { warn: () => undefined },
    } as unknown as DatasetsContext;
    const queries = ['topic1 question', 'topic2 answer', 'topic3', 'question 7', 'answer 12', 'topic4 word', 'topic0', 'question answer'];
    const outcome = await createSearchService(ctx).searchPriced({
      teamId: 't1',
      datasetIds: ['ds1'],
      vectorModel: LOCAL_LEXICAL_VECTOR_MODEL,
      queries,
      limit: 100_000,
      similarity: 0,
      searchMode: 'mixedRecall',
      usingReRank: false,
    });
    ping.stop();
    // 8 vector scans, then 8 full-text scans, with a turn of the loop before each but the first.
    expect(seenAt).toHaveLength(16);
    for (let i = 1; i < seenAt.length; i++) expect(seenAt[i], `scan ${i}`).toBeGreaterThan(seenAt[i - 1]!);
    // Results: the same items as the scans give when run back to back.
    const ids = new Set(outcome.list.map((item) => item.id));
    for (const query of queries) {
      for (const hit of fullTextSearch([...new Set(tokenizeForSearch(query))], 60, new Set())) expect(ids.has(hit.item._id)).toBe(true);
    }
  });
});

describe('v1/embeddings answer', () => {
  /** The former encoding: one writeFloatLE per value. */
  const base64ByWrites = (vector: number[]) => {
    const bytes = Buffer.alloc(vector.length * 4);
    for (const [index, value] of vector.entries()) bytes.writeFloatLE(value, index * 4);
    return bytes.toString('base64');
  };

  it('base64 and sizing give what they gave before', () => {
    const vector = lexicalEmbed('hello world');
    expect(float32Base64(vector)).toBe(base64ByWrites(vector));
    const sized = normaliseDimensions(vector);
    expect(sized).toEqual([...vector, ...new Array(1536 - vector.length).fill(0)]);
    expect(normaliseDimensions(Array.from({ length: 2000 }, (_, i) => i))).toEqual(Array.from({ length: 1536 }, (_, i) => i));
  });

  it('is serialised in pieces with the loop handed back, as JSON.stringify gave it', async () => {
    const vectors = Array.from({ length: 300 }, (_, i) => normaliseDimensions(lexicalEmbed(`w${i}`)));
    for (const format of ['float', 'base64'] as const) {
      const ping = loopTurns();
      const chunks: Buffer[] = [];
      for await (const chunk of embeddingsAnswerChunks(vectors, format, 'local', 42)) chunks.push(chunk);
      const body = Buffer.concat(chunks).toString();
      ping.stop();
      // 300 × 1536 values: five pieces of up to ~100,000 values each.
      expect(chunks.length, format).toBe(5);
      expect(ping.turns, format).toBeGreaterThanOrEqual(3);
      const data = vectors.map((vector, index) => ({ object: 'embedding', index, embedding: format === 'base64' ? base64ByWrites(vector) : vector }));
      expect(body).toBe(JSON.stringify({ object: 'list', data, model: 'local', usage: { prompt_tokens: 42, total_tokens: 42 } }));
    }
  });
});
