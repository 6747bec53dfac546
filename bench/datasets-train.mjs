// Training throughput with the built-in local model (local-lexical-v1), two figures:
// 1. ingest: BENCH_API_CHUNKS (2,000) chunks through pushData (200 per request, the API cap) with
//    the worker running, until the queue is empty — the whole HTTP path;
// 2. training: BENCH_CHUNKS (10,000) queue items written straight into dataset_trainings, then
//    the in-process worker alone until the queue is empty (chunks/s of the worker).
//   node bench/datasets-train.mjs
import { ObjectId } from 'mongodb';
import { startBenchEnvironment } from './lib.mjs';
import { chunkText, rootClient } from './datasets-common.mjs';

const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 10_000);
const API_CHUNKS = Number(process.env.BENCH_API_CHUNKS ?? 2_000);
const env = await startBenchEnvironment({ env: { TRAINING_WORKER: 'true', PLAN_MAX_DATASET_SIZE: '10000000' } });
// A killed bench must not leave its server and database behind.
process.once('SIGTERM', () => env.stop().finally(() => process.exit(1)));

// Counts the queue itself (the items of the second figure are written around the API, so the
// queue counts the API reads, fed by the queue's own writes, do not know them), once every
// BENCH_POLL_MS (100).
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 100);
async function waitForEmptyQueue(datasetId) {
  for (;;) {
    if ((await env.db.collection('dataset_trainings').countDocuments({ datasetId: new ObjectId(datasetId) })) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

try {
  const { call } = await rootClient(env.url);
  const datasetId = await call('POST', '/core/dataset/create', { name: 'bench training' });
  const collectionId = await call('POST', '/core/dataset/collection/create', { datasetId, name: 'bench', type: 'virtual' });

  let started = performance.now();
  for (let start = 0; start < API_CHUNKS; start += 200) {
    const data = Array.from({ length: Math.min(200, API_CHUNKS - start) }, (_, i) => ({ q: chunkText(start + i), chunkIndex: start + i }));
    await call('POST', '/core/dataset/data/pushData', { collectionId, data });
  }
  await waitForEmptyQueue(datasetId);
  let seconds = (performance.now() - started) / 1000;
  console.log(JSON.stringify({ bench: 'datasets ingest via pushData + training', chunks: API_CHUNKS, 'total s': seconds.toFixed(1), 'chunks/s': Math.round(API_CHUNKS / seconds) }));

  const dataset = await env.db.collection('datasets').findOne({ _id: new ObjectId(datasetId) });
  const items = Array.from({ length: CHUNKS }, (_, i) => ({
    teamId: dataset.teamId,
    tmbId: dataset.tmbId,
    datasetId: dataset._id,
    collectionId: new ObjectId(collectionId),
    billId: '',
    mode: 'chunk',
    expireAt: new Date(),
    lockTime: new Date('2000-01-01T00:00:00Z'),
    model: 'local-lexical-v1',
    prompt: '',
    q: chunkText(API_CHUNKS + i),
    a: '',
    chunkIndex: API_CHUNKS + i,
    weight: 0,
    indexes: [],
    retryCount: 0,
  }));
  started = performance.now();
  for (let start = 0; start < CHUNKS; start += 1000) await env.db.collection('dataset_trainings').insertMany(items.slice(start, start + 1000));
  await waitForEmptyQueue(datasetId);
  seconds = (performance.now() - started) / 1000;
  const trained = (await env.db.collection('dataset_datas').countDocuments({})) - API_CHUNKS;
  console.log(JSON.stringify({ bench: 'datasets-train worker (local-lexical-v1)', chunks: trained, 'total s': seconds.toFixed(1), 'chunks/s': Math.round(trained / seconds) }));
} finally {
  await env.stop();
}
