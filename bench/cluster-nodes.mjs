// GET /kapis/resources.platform.io/v1alpha3/nodes?limit=10&page=N&sortBy=name with 1,000 and
// 10,000 stored nodes, against a bare Fastify route running the same count + page query.
// Nodes are loaded through the real admin CLI (`cluster nodes import`), as an operator would.
// Two servers share the database: CLUSTER_NODE_QUERY=auto (the cached node index on FerretDB)
// and CLUSTER_NODE_QUERY=database (filters, sort and paging in the database).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../scripts/local-db.mjs';
import { BENCH_SECRETS, benchSeconds, measure, report, startBaselineProcess, startBenchEnvironment } from './lib.mjs';

// Long enough for several full-scan requests at 10,000 nodes on FerretDB.
const duration = benchSeconds(10);
// FerretDB 1.x (SQLite) runs one query at a time and scans for most of them: with autocannon's
// 10 connections every request would wait seconds in its queue. Two connections keep the
// database busy without measuring only queueing.
const connections = Number(process.env.BENCH_CONNECTIONS ?? 2);
const dir = mkdtempSync(join(tmpdir(), 'bench-nodes-'));

function nodeList(from, to) {
  const items = [];
  for (let index = from; index < to; index++) {
    const name = `node-${String(index).padStart(5, '0')}`;
    items.push({
      metadata: {
        name,
        uid: `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`,
        resourceVersion: String(index + 1),
        creationTimestamp: new Date(Date.UTC(2024, 0, 1) + index * 1000).toISOString().replace(/\.\d+Z$/, 'Z'),
        labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', [`node-role.kubernetes.io/${index % 10 === 0 ? 'master' : 'worker'}`]: '', zone: `z${index % 3}` },
        annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
      },
      spec: { podCIDR: `10.${index >> 8}.${index & 255}.0/24` },
      status: {
        capacity: { cpu: '8', memory: '32768000Ki', pods: '110' },
        allocatable: { cpu: '8', memory: '32665600Ki', pods: '110' },
        conditions: [
          { type: 'MemoryPressure', status: 'False' },
          { type: 'DiskPressure', status: 'False' },
          { type: 'PIDPressure', status: 'False' },
          { type: 'Ready', status: index % 50 === 0 ? 'False' : 'True' },
        ],
        addresses: [{ type: 'InternalIP', address: `10.1.${index >> 8}.${index & 255}` }, { type: 'Hostname', address: name }],
        nodeInfo: { kernelVersion: '5.15.0', osImage: 'Ubuntu 22.04 LTS', kubeletVersion: 'v1.26.5', operatingSystem: 'linux', architecture: 'amd64' },
      },
    });
  }
  return { apiVersion: 'v1', kind: 'List', items };
}

function importNodes(mongoUri, from, to) {
  const file = join(dir, `nodes-${from}-${to}.json`);
  writeFileSync(file, JSON.stringify(nodeList(from, to)));
  const started = Date.now();
  execFileSync(process.execPath, ['dist/cli.js', 'cluster', 'nodes', 'import', file], {
    env: { ...process.env, ...BENCH_SECRETS, NODE_ENV: 'production', CLUSTER_ADMIN_PASSWORD: 'P@88w0rd', MONGODB_URI: mongoUri },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  console.log(`imported ${to - from} nodes in ${Date.now() - started} ms`);
}

/** A second server on the same database with the database-side list strategy. */
async function startDatabaseStrategyServer(mongoUri) {
  const port = await freePort();
  const child = spawn(process.execPath, ['dist/server.js'], {
    env: { ...process.env, ...BENCH_SECRETS, LOG_LEVEL: 'warn', NODE_ENV: 'production', CLUSTER_ADMIN_PASSWORD: 'P@88w0rd', CLUSTER_REGISTER_HOST_NODE: 'false', CLUSTER_NODE_QUERY: 'database', MONGODB_URI: mongoUri, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let attempt = 0; attempt < 150; attempt++) {
    if ((await fetch(`${url}/readyz`).catch(() => null))?.ok) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { url, stop: () => new Promise((resolve) => child.once('exit', resolve).kill('SIGTERM')) };
}

const env = await startBenchEnvironment({ env: { CLUSTER_REGISTER_HOST_NODE: 'false' } });
const databaseServer = await startDatabaseStrategyServer(env.mongoUri);
try {
  const login = await fetch(`${env.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', username: 'admin', password: 'P@88w0rd', client_id: 'kubesphere', client_secret: 'kubesphere' }),
  });
  const { access_token: token } = await login.json();
  const headers = { authorization: `Bearer ${token}` };

  const baseline = await startBaselineProcess('bench/baselines/cluster-nodes.mjs', { mongoUri: env.mongoUri });

  const rows = [];
  const run = async (label, page) => {
    const query = `limit=10&page=${page}&sortBy=name`;
    // Warm-up: one complete request each (the first one after an import reloads the cached index).
    for (const url of [`${baseline.url}/nodes?${query}`, `${env.url}/kapis/resources.platform.io/v1alpha3/nodes?${query}`, `${databaseServer.url}/kapis/resources.platform.io/v1alpha3/nodes?${query}`]) {
      const started = Date.now();
      const response = await fetch(url, { headers });
      await response.text();
      console.log(`warm-up ${response.status} in ${Date.now() - started} ms: ${url.replace(/^http:\/\/[^/]+/, '')}`);
    }
    // After each load the database may still be busy with the requests that were in flight;
    // one more complete request waits for them, so the next measurement starts clean.
    const drain = async (url, requestHeaders = {}) => (await fetch(url, { headers: requestHeaders })).text();
    const ours = await measure({ url: `${env.url}/kapis/resources.platform.io/v1alpha3/nodes?${query}`, headers, duration, connections });
    await drain(`${env.url}/kapis/resources.platform.io/v1alpha3/nodes?${query}`, headers);
    const bare = await measure({ url: `${baseline.url}/nodes?${query}`, duration, connections });
    await drain(`${baseline.url}/nodes?${query}`);
    rows.push(report(`${label} (auto: cached index)`, ours, bare));
    const inDatabase = await measure({ url: `${databaseServer.url}/kapis/resources.platform.io/v1alpha3/nodes?${query}`, headers, duration, connections });
    await drain(`${databaseServer.url}/kapis/resources.platform.io/v1alpha3/nodes?${query}`, headers);
    report(`${label} (database strategy)`, inDatabase, bare);
  };
  try {
    importNodes(env.mongoUri, 0, 1000);
    await run('nodes 1,000 stored, page 50', 50);
    importNodes(env.mongoUri, 1000, 10000);
    await run('nodes 10,000 stored, page 50', 50);
    await run('nodes 10,000 stored, page 999', 999);
    const [small, large] = rows;
    console.log(
      JSON.stringify({
        '10k/1k req/s ratio': (large['req/s'] / small['req/s']).toFixed(2),
        '10k/1k p99 ratio': (large['p99 ms'] / small['p99 ms']).toFixed(2),
        'within 2x': large['req/s'] * 2 >= small['req/s'] && large['p99 ms'] <= small['p99 ms'] * 2,
      }),
    );
  } finally {
    await baseline.stop();
  }
} finally {
  await databaseServer.stop();
  await env.stop();
  rmSync(dir, { recursive: true, force: true });
}
