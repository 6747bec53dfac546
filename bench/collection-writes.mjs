// Deleting, renaming and moving collections in a team with many of them: BENCH_COLLECTIONS
// (default 20,000) collections in one dataset, copies of one made through the API (each naming a
// file of its own, as a file import does), written straight into the store; then each route timed
// 4 times in turn, after one run to warm up.
// Usage: npm run build && node bench/collection-writes.mjs
import { ObjectId } from 'mongodb';
import { rootClient, timerOver } from './datasets-common.mjs';
import { startBenchEnvironment } from './lib.mjs';
const N = Number(process.env.BENCH_COLLECTIONS) || 20_000;
const env = await startBenchEnvironment({ env: { TRAINING_WORKER: 'false', CLUSTER_REGISTER_HOST_NODE: 'false' } });
try {
  const { call } = await rootClient(env.url);
  const datasetId = await call('POST', '/core/dataset/create', { name: 'many collections' });
  const folder = await call('POST', '/core/dataset/collection/create', { datasetId, name: 'folder', type: 'folder' });
  const template = await env.db.collection('dataset_collections').findOne({ _id: new ObjectId(await call('POST', '/core/dataset/collection/create', { datasetId, name: 'template', type: 'virtual' })) });
  const ids = [];
  for (let s = 0; s < N; s += 1000) {
    const docs = Array.from({ length: Math.min(1000, N - s) }, (_, j) => ({ ...template, _id: new ObjectId(), name: `collection ${s + j}`, fileId: new ObjectId() }));
    await env.db.collection('dataset_collections').insertMany(docs);
    ids.push(...docs.map((doc) => doc._id.toHexString()));
  }
  console.log(`seeded ${N} collections`);
  const timed = timerOver(ids);
  const routes = [
    ['/core/dataset/collection/delete', (id) => call('DELETE', `/core/dataset/collection/delete?id=${id}`)],
    ['/core/dataset/collection/update (rename)', (id) => call('PUT', '/core/dataset/collection/update', { id, name: `renamed ${id}` })],
    ['/core/dataset/collection/update (move into a folder)', (id) => call('PUT', '/core/dataset/collection/update', { id, parentId: folder })],
  ];
  for (const [route, run] of routes) console.log(JSON.stringify({ route, 'ms per request, in turn': await timed(run) }));
} finally { await env.stop(); }
