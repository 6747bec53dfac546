// Deleting and editing data items in a team that stores many vectors: BENCH_VECTORS (default
// 20,000) vectors of 1,536 dimensions, each the index of one data item of one collection, written
// straight into the store; then data/delete and data/update (a new q: one vector embedded, the
// old one removed) timed 4 times each in turn, after one of each to warm up (the dataset's search
// index is built on the first).
// Usage: npm run build && node bench/data-writes.mjs
import { Binary, ObjectId } from 'mongodb';
import { rootClient, timerOver } from './datasets-common.mjs';
import { startBenchEnvironment } from './lib.mjs';
const N = Number(process.env.BENCH_VECTORS) || 20_000;
const env = await startBenchEnvironment({ env: { TRAINING_WORKER: 'false', CLUSTER_REGISTER_HOST_NODE: 'false', PLAN_MAX_DATASET_SIZE: '10000000' } });
try {
  const { user, call } = await rootClient(env.url);
  const datasetId = await call('POST', '/core/dataset/create', { name: 'many vectors' });
  const collectionId = await call('POST', '/core/dataset/collection/create', { datasetId, name: 'c', type: 'virtual' });
  const { vectorModel } = await call('GET', `/core/dataset/detail?id=${datasetId}`);
  const owner = { teamId: new ObjectId(user.team.teamId), datasetId: new ObjectId(datasetId), collectionId: new ObjectId(collectionId) };
  const vector = new Binary(Buffer.alloc(1536 * 4, 1));
  const dataIds = [];
  for (let s = 0; s < N; s += 1000) {
    const items = Array.from({ length: Math.min(1000, N - s) }, (_, j) => ({ _id: new ObjectId(), vectorId: new ObjectId().toHexString(), text: `item ${s + j} lorem ipsum dolor` }));
    await env.db.collection('dataset_vectors').insertMany(items.map((item) => ({ _id: item.vectorId, ...owner, dataId: item._id, model: vectorModel.model, vector })));
    await env.db.collection('dataset_datas').insertMany(items.map((item, j) => ({ _id: item._id, ...owner, tmbId: new ObjectId(user.team.tmbId), q: item.text, a: '', chunkIndex: s + j, indexes: [{ defaultIndex: true, dataId: item.vectorId, text: item.text }], fullTextTokens: item.text.split(' '), updateTime: new Date() })));
    dataIds.push(...items.map((item) => item._id.toHexString()));
  }
  console.log(`seeded ${N} data items and vectors`);
  const timed = timerOver(dataIds);
  console.log(JSON.stringify({ route: '/core/dataset/data/delete', 'ms per request, in turn': await timed((id) => call('DELETE', `/core/dataset/data/delete?id=${id}`)) }));
  console.log(JSON.stringify({ route: '/core/dataset/data/update', 'ms per request, in turn': await timed((id) => call('PUT', '/core/dataset/data/update', { dataId: id, q: `edited ${id}` })) }));
} finally { await env.stop(); }
