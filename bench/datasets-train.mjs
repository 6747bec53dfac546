// Training throughput with the built-in local model: queue 10,000 chunks through pushData
// (200 per request, as the API caps it), let the in-process worker train them, report chunks/s.
//   node bench/datasets-train.mjs        (BENCH_CHUNKS to change the count)
import { startBenchEnvironment } from './lib.mjs';
import { chunkText, rootClient } from './datasets-common.mjs';

const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 10_000);
const env = await startBenchEnvironment({ env: { TRAINING_WORKER: 'true', PLAN_MAX_DATASET_SIZE: '10000000' } });
// A killed bench must not leave its server and database behind.
process.once('SIGTERM', () => env.stop().finally(() => process.exit(1)));
try {
  const { call } = await rootClient(env.url);
  const datasetId = await call('POST', '/core/dataset/create', { name: 'bench training' });
  const collectionId = await call('POST', '/core/dataset/collection/create', { datasetId, name: 'bench', type: 'virtual' });
  const started = performance.now();
  for (let start = 0; start < CHUNKS; start += 200) {
    const data = Array.from({ length: Math.min(200, CHUNKS - start) }, (_, i) => ({ q: chunkText(start + i), chunkIndex: start + i }));
    await call('POST', '/core/dataset/data/pushData', { collectionId, data });
  }
  const queued = performance.now();
  for (;;) {
    const { trainingCount } = await call('GET', `/core/dataset/training/getDatasetTrainingQueue?datasetId=${datasetId}`);
    if (trainingCount === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const done = performance.now();
  const trained = await env.db.collection('dataset_datas').countDocuments({});
  console.log(
    JSON.stringify({
      bench: 'datasets-train (local-lexical-v1)',
      chunks: trained,
      'queue s': ((queued - started) / 1000).toFixed(1),
      'total s': ((done - started) / 1000).toFixed(1),
      'chunks/s': Math.round(trained / ((done - started) / 1000)),
    }),
  );
} finally {
  await env.stop();
}
