// The plan page and the dataset size check with many stored vectors: both used to count the
// team's vectors, a scan of every vector on FerretDB; they now read the team's vector counter.
// Seeds BENCH_VECTORS (default 20,000) vectors of 1,536 dimensions for root's team straight into
// the store (no counter yet: the first request counts them, once), then times each route 5 times.
// Usage: npm run build && node bench/plan-usage.mjs
import { ObjectId, Binary } from 'mongodb';
import { rootClient } from './datasets-common.mjs';
import { startBenchEnvironment } from './lib.mjs';

const VECTORS = Number(process.env.BENCH_VECTORS) || 20_000;
const env = await startBenchEnvironment({ env: { TRAINING_WORKER: 'false', CLUSTER_REGISTER_HOST_NODE: 'false' } });
try {
  const { token, user } = await rootClient(env.url);
  const teamId = new ObjectId(user.team.teamId);
  const vector = new Binary(Buffer.alloc(1536 * 4, 1));
  for (let start = 0; start < VECTORS; start += 1000) {
    const docs = Array.from({ length: Math.min(1000, VECTORS - start) }, (_, i) => ({
      _id: `bench-${start + i}`,
      teamId,
      datasetId: new ObjectId(),
      collectionId: new ObjectId(),
      dataId: new ObjectId(),
      model: 'bench',
      vector,
    }));
    await env.db.collection('dataset_vectors').insertMany(docs);
  }
  console.log(`seeded ${VECTORS} vectors`);
  for (const path of ['/api/support/user/team/plan/getTeamPlanStatus', '/api/support/user/team/limit/datasetSizeLimit?size=10']) {
    const times = [];
    for (let round = 0; round < 5; round++) {
      const started = performance.now();
      const response = await fetch(`${env.url}${path}`, { headers: { token } });
      if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
      await response.arrayBuffer();
      times.push(Math.round(performance.now() - started));
    }
    console.log(JSON.stringify({ route: path.split('?')[0], 'ms per request, in turn': times.join(' ') }));
  }
} finally {
  await env.stop();
}
