// searchTest on a 100,000-chunk dataset, p50/p99 per search mode. The chunks are written straight
// into MongoDB in the stored format training produces (same embedding, float32 binary vectors,
// search tokens; training speed is datasets-train.mjs's subject); queries then go through the
// real HTTP route. The first query builds the dataset's in-process index (timed separately).
//   node bench/datasets-search.mjs       (BENCH_CHUNKS, BENCH_SECONDS to change)
import { register } from 'tsx/esm/api';
import { Binary, ObjectId } from 'mongodb';
import { benchSeconds, measure, startBenchEnvironment } from './lib.mjs';
import { chunkText, rootClient } from './datasets-common.mjs';

register();
const { lexicalEmbed } = await import('../src/domain/lexical-embedding.ts');
const { tokenizeForSearch } = await import('../src/domain/full-text.ts');

const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 100_000);
const SECONDS = benchSeconds(10);
const env = await startBenchEnvironment();
process.once('SIGTERM', () => env.stop().finally(() => process.exit(1)));
try {
  const { token, call } = await rootClient(env.url);
  const datasetId = await call('POST', '/core/dataset/create', { name: 'bench search' });
  const collectionId = await call('POST', '/core/dataset/collection/create', { datasetId, name: 'bench', type: 'virtual' });
  const dataset = await env.db.collection('datasets').findOne({ _id: new ObjectId(datasetId) });
  const owner = { teamId: dataset.teamId, tmbId: dataset.tmbId, datasetId: dataset._id, collectionId: new ObjectId(collectionId) };
  const seeded = performance.now();
  const queries = [];
  for (let start = 0; start < CHUNKS; start += 1000) {
    const datas = [];
    const vectors = [];
    for (let i = start; i < Math.min(CHUNKS, start + 1000); i++) {
      const q = chunkText(i);
      if (i % 1000 === 0) queries.push(q.split(' ').slice(2, 8).join(' '));
      const _id = new ObjectId();
      const vectorId = `${_id.toHexString()}-0`;
      datas.push({ _id, ...owner, q, a: '', chunkIndex: i, indexes: [{ defaultIndex: true, dataId: vectorId, text: q }], fullTextTokens: [...new Set(tokenizeForSearch(q))], updateTime: new Date() });
      vectors.push({ _id: vectorId, teamId: owner.teamId, datasetId: owner.datasetId, collectionId: owner.collectionId, dataId: _id, model: 'local-lexical-v1', vector: new Binary(Buffer.from(Float32Array.from(lexicalEmbed(q)).buffer)) });
    }
    await env.db.collection('dataset_vectors').insertMany(vectors, { ordered: false });
    await env.db.collection('dataset_datas').insertMany(datas, { ordered: false });
  }
  console.log(JSON.stringify({ bench: 'datasets-search seed', chunks: CHUNKS, 'seed s': ((performance.now() - seeded) / 1000).toFixed(1) }));
  const headers = { token };
  const url = `${env.url}/api/core/dataset/searchTest`;
  // First query loads the dataset's vector index from MongoDB.
  const loadStart = performance.now();
  await call('POST', '/core/dataset/searchTest', { datasetId, text: queries[0] });
  console.log(JSON.stringify({ bench: 'datasets-search index load (first query)', ms: Math.round(performance.now() - loadStart) }));
  for (const searchMode of ['embedding', 'fullTextRecall', 'mixedRecall']) {
    const result = await measure({ url, method: 'POST', headers, body: { datasetId, text: queries[1] ?? queries[0], searchMode }, connections: 4, duration: SECONDS });
    console.log(
      JSON.stringify({
        bench: `searchTest ${searchMode} (${CHUNKS} chunks)`,
        'req/s': Math.round(result.requestsPerSecond),
        'p50 ms': result.p50,
        'p99 ms': result.p99,
        requests: result.total,
        'non-2xx/errors': result.failures,
      }),
    );
  }
} finally {
  await env.stop();
}
