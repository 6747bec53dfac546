// The dataset pages with many data items: BENCH_ITEMS (default 20,000) items of ~1 KB in 10
// collections of one dataset, written straight into the store (so the first collection list
// builds the dataset's search index from them, once), then each page timed 4 times in turn.
// The collection list's data amounts come from that index; the data list is a kept page (read
// again after a write: the edited items only, after an edit through the API).
// With BENCH_QUEUED (default 0), that many items also wait in the training queue (pushed
// through pushData, 200 at a time, with no worker running), as during a large import.
// Usage: npm run build && node bench/dataset-pages.mjs
import { ObjectId } from 'mongodb';
import { rootClient } from './datasets-common.mjs';
import { startBenchEnvironment } from './lib.mjs';
const N = Number(process.env.BENCH_ITEMS) || 20_000;
const QUEUED = Number(process.env.BENCH_QUEUED) || 0;
const env = await startBenchEnvironment({ env: { TRAINING_WORKER: 'false', CLUSTER_REGISTER_HOST_NODE: 'false' } });
try {
  const { user, call } = await rootClient(env.url);
  const datasetId = await call('POST', '/core/dataset/create', { name: 'big' });
  const collectionIds = [];
  for (let i = 0; i < 10; i++) collectionIds.push(await call('POST', '/core/dataset/collection/create', { datasetId, name: `c${i}`, type: 'virtual' }));
  const text = 'lorem ipsum dolor sit amet '.repeat(20);
  const tokens = text.split(' ').slice(0, 60).map((w, i) => `${w}${i}`);
  for (let s = 0; s < N; s += 1000) {
    await env.db.collection('dataset_datas').insertMany(Array.from({ length: 1000 }, (_, j) => ({ teamId: new ObjectId(user.team.teamId), tmbId: new ObjectId(user.team.tmbId), datasetId: new ObjectId(datasetId), collectionId: new ObjectId(collectionIds[(s + j) % 10]), q: text, a: text, chunkIndex: s + j, indexes: [{ defaultIndex: true, dataId: new ObjectId().toHexString(), text }], fullTextTokens: tokens, updateTime: new Date() })));
  }
  console.log(`seeded ${N} data items`);
  for (let s = 0; s < QUEUED; s += 200) {
    const data = Array.from({ length: Math.min(200, QUEUED - s) }, (_, j) => ({ q: `${text} queued ${s + j}`, a: text }));
    await call('POST', '/core/dataset/data/pushData', { collectionId: collectionIds[(s / 200) % 10], trainingType: 'chunk', data });
  }
  if (QUEUED > 0) console.log(`queued ${QUEUED} items`);
  /** Milliseconds of 4 runs in turn. */
  const timed = async (run) => {
    const times = [];
    for (let r = 0; r < 4; r++) {
      const started = performance.now();
      await run();
      times.push(Math.round(performance.now() - started));
    }
    return times.join(' ');
  };
  for (const [path, body] of [['/core/dataset/collection/list', { datasetId, offset: 0, pageSize: 10 }], ['/core/dataset/collection/list', { datasetId, offset: 0, pageSize: 5 }], ['/core/dataset/data/list', { collectionId: collectionIds[0], offset: 0, pageSize: 10 }], ['/core/dataset/training/getDatasetTrainingQueue', { datasetId }]]) {
    console.log(JSON.stringify({ route: path, pageSize: body.pageSize, 'ms per request, in turn': await timed(() => call('POST', path, body)) }));
  }
  // The page the web client reads right after an edit: the kept list reads the edited item again, not the collection.
  const { list } = await call('POST', '/core/dataset/data/v2/list', { collectionId: collectionIds[0], offset: 0, pageSize: 10 });
  const afterEdit = [];
  for (let r = 0; r < 4; r++) {
    await call('PUT', '/core/dataset/data/update', { dataId: list[r]._id, q: `${text} edited ${r}` });
    const started = performance.now();
    await call('POST', '/core/dataset/data/list', { collectionId: collectionIds[0], offset: 0, pageSize: 10 });
    afterEdit.push(Math.round(performance.now() - started));
  }
  console.log(JSON.stringify({ route: '/core/dataset/data/list, first page after an edit', 'ms per request, in turn': afterEdit.join(' ') }));
  // Also read on every page of the web client during an import, and by every Prometheus scrape.
  const { vectorModel } = await call('GET', `/core/dataset/detail?id=${datasetId}`);
  for (const [route, run] of [['/core/dataset/training/getQueueLen', () => call('POST', '/core/dataset/training/getQueueLen', { vectorModel: vectorModel.model })], ['/metrics', () => fetch(`${env.url}/metrics`).then((r) => r.text())]]) {
    console.log(JSON.stringify({ route, 'ms per request, in turn': await timed(run) }));
  }
} finally { await env.stop(); }
