// searchTest latency at 5,000 and 100,000 chunks, per search mode, and how long a process takes
// to open a stored index. Chunks are written straight into MongoDB in the format training
// produces (local-lexical-v1 vectors as float32 binary, search tokens), and the dataset's index
// snapshot is stored through the app's own codec and repository, as a running server would
// store it; queries then go through the real HTTP route of the built server.
//   node bench/search-scale.mjs
//   BENCH_SIZES=5000,100000  BENCH_SECONDS=10  BENCH_CONNECTIONS=1,4
//   BENCH_SOURCE_OPEN=1      also time the rebuild from data items (no snapshot) at every size
import { spawn } from 'node:child_process';
import { Binary, ObjectId } from 'mongodb';
import { register } from 'tsx/esm/api';
import { freePort } from '../scripts/local-db.mjs';
import { chunkText, rootClient } from './datasets-common.mjs';
import { BENCH_SECRETS, benchSeconds, measure, startBenchEnvironment } from './lib.mjs';

register();
const { lexicalEmbed } = await import('../src/domain/lexical-embedding.ts');
const { tokenizeForSearch } = await import('../src/domain/full-text.ts');
const { DatasetEntry } = await import('../src/platform/datasets/search/dataset-entry.ts');
const { captureSnapshot, encodeSnapshot } = await import('../src/platform/datasets/search/index-codec.ts');
const { createIndexStore } = await import('../src/platform/datasets/search/index-store.repo.ts');

const SIZES = (process.env.BENCH_SIZES ?? '5000,100000').split(',').map(Number);
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '1,4').split(',').map(Number);
const SECONDS = benchSeconds(10);
const MODEL = 'local-lexical-v1';
const print = (row) => console.log(JSON.stringify(row));

const env = await startBenchEnvironment();
process.once('SIGTERM', () => env.stop().finally(() => process.exit(1)));
const store = createIndexStore(env.db);

/** Seeds `count` chunks into a new dataset and stores its index snapshot; returns the dataset id and queries. */
async function seed(call, count) {
  const datasetId = await call('POST', '/core/dataset/create', { name: `scale ${count}` });
  const collectionId = await call('POST', '/core/dataset/collection/create', { datasetId, name: 'bench', type: 'virtual' });
  const dataset = await env.db.collection('datasets').findOne({ _id: new ObjectId(datasetId) });
  const owner = { teamId: dataset.teamId, tmbId: dataset.tmbId, datasetId: dataset._id, collectionId: new ObjectId(collectionId) };
  const entry = new DatasetEntry(datasetId, MODEL);
  const queries = [];
  const started = performance.now();
  for (let start = 0; start < count; start += 1000) {
    const datas = [];
    const vectors = [];
    for (let i = start; i < Math.min(count, start + 1000); i++) {
      const q = chunkText(i);
      if (i % 997 === 0) queries.push(q.split(' ').slice(2, 8).join(' '));
      const _id = new ObjectId();
      const vectorId = `${_id.toHexString()}-0`;
      const vector = lexicalEmbed(q);
      const fullTextTokens = [...new Set(tokenizeForSearch(q))];
      datas.push({ _id, ...owner, q, a: '', chunkIndex: i, indexes: [{ defaultIndex: true, dataId: vectorId, text: q }], fullTextTokens, updateTime: new Date() });
      vectors.push({ _id: vectorId, teamId: owner.teamId, datasetId: owner.datasetId, collectionId: owner.collectionId, dataId: _id, model: MODEL, vector: new Binary(Buffer.from(Float32Array.from(vector).buffer)) });
      entry.putItem({ _id: _id.toHexString(), datasetId, collectionId, q, a: '', chunkIndex: i }, fullTextTokens);
      entry.putVector({ id: vectorId, dataId: _id.toHexString(), vector });
    }
    await env.db.collection('dataset_vectors').insertMany(vectors, { ordered: false });
    await env.db.collection('dataset_datas').insertMany(datas, { ordered: false });
  }
  const seeded = performance.now();
  const parts = await encodeSnapshot(captureSnapshot(entry));
  const snapshot = `bench-${datasetId}`;
  const claimed = await store.claim(datasetId, MODEL, new Date(), new Date(Date.now() + 60_000));
  await store.writeParts(datasetId, snapshot, parts);
  if (!(await store.publish(datasetId, claimed, { snapshot, seq: 0, model: MODEL, parts: parts.length }, new Date()))) throw new Error('snapshot not published');
  const bytes = parts.reduce((sum, part) => sum + part.data.byteLength, 0);
  print({ bench: 'search-scale seed', chunks: count, 'seed s': ((seeded - started) / 1000).toFixed(1), 'snapshot s': ((performance.now() - seeded) / 1000).toFixed(1), 'snapshot parts': parts.length, 'snapshot MB': (bytes / 2 ** 20).toFixed(1) });
  return { datasetId, queries };
}

/** A second server process on the same database: the time until its first search answers. */
async function restartedOpen(datasetId, query) {
  const port = await freePort();
  const started = performance.now();
  const server = spawn(process.execPath, ['dist/server.js'], {
    env: { ...process.env, ...BENCH_SECRETS, LOG_LEVEL: 'info', NODE_ENV: 'production', CLUSTER_ADMIN_PASSWORD: 'P@88w0rd', MONGODB_URI: env.mongoUri, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // The server's own account of opening each index.
  server.stdout.on('data', (chunk) => {
    for (const line of chunk.toString().split('\n')) if (line.includes('search index of dataset')) print({ bench: 'restarted server log', line: JSON.parse(line).msg });
  });
  try {
    const url = `http://127.0.0.1:${port}`;
    for (;;) {
      try {
        if ((await fetch(`${url}/readyz`)).ok) break;
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const ready = performance.now();
    const { call } = await rootClient(url);
    await call('POST', '/core/dataset/searchTest', { datasetId, text: query });
    return { 'ready ms': Math.round(ready - started), 'first search answered ms': Math.round(performance.now() - started) };
  } finally {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
}

try {
  const { token, call } = await rootClient(env.url);
  const url = `${env.url}/api/core/dataset/searchTest`;
  for (const count of SIZES) {
    const { datasetId, queries } = await seed(call, count);
    const opened = performance.now();
    await call('POST', '/core/dataset/searchTest', { datasetId, text: queries[0] });
    print({ bench: `search-scale open stored index (${count} chunks, first search)`, ms: Math.round(performance.now() - opened) });
    for (const searchMode of ['embedding', 'fullTextRecall', 'mixedRecall']) {
      const body = { datasetId, text: queries[1] ?? queries[0], searchMode };
      const check = await call('POST', '/core/dataset/searchTest', body);
      for (const connections of CONNECTIONS) {
        const result = await measure({ url, method: 'POST', headers: { token }, body, connections, duration: SECONDS });
        print({ bench: `searchTest ${searchMode} (${count} chunks)`, connections, 'p50 ms': result.p50, 'p99 ms': result.p99, 'req/s': Math.round(result.requestsPerSecond), requests: result.total, 'non-2xx/errors': result.failures, results: check.list.length });
      }
    }
    print({ bench: `search-scale restart (${count} chunks)`, ...(await restartedOpen(datasetId, queries[2] ?? queries[0])) });
    if (process.env.BENCH_SOURCE_OPEN === '1') {
      // Without a snapshot, a process rebuilds the index from the data items (what every start did before).
      await env.db.collection('dataset_index_meta').deleteOne({ _id: datasetId });
      const restarted = await restartedOpen(datasetId, queries[3] ?? queries[0]);
      print({ bench: `search-scale rebuild from data items (${count} chunks, no snapshot)`, ...restarted });
    }
  }
} finally {
  await env.stop();
}
