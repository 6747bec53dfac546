// The node list at 1,000 and 10,000 stored nodes (1,000 pods on the first 1,000 nodes, so every
// listed node carries its usage annotations; importing 10,000 pods takes minutes on FerretDB), at 1 and 16 connections, against "the limit": a bare Fastify route answering the
// very same bytes from memory. Nodes and pods are loaded through the real admin CLI.
//   GET /kapis/resources.platform.io/v1alpha3/nodes?limit=10&page=50&sortBy=name, bearer token
// Prints one line per measurement, then the 10k/1k ratios (the target: within 2x).
// Usage: node bench/nodes-scale.mjs  (builds first; BENCH_SECONDS, default 5)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { againstLimit, BENCH_SECRETS, benchSeconds, fasterOf, measure, startBenchEnvironment, startLimit } from './lib.mjs';

const duration = benchSeconds(5);
const CONNECTIONS = [1, 16];
const dir = mkdtempSync(join(tmpdir(), 'bench-nodes-scale-'));
const name = (index) => `node-${String(index).padStart(5, '0')}`;

function nodeList(from, to) {
  const items = [];
  for (let index = from; index < to; index++) {
    items.push({
      metadata: {
        name: name(index),
        uid: `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`,
        resourceVersion: String(index + 1),
        creationTimestamp: new Date(Date.UTC(2024, 0, 1) + index * 1000).toISOString().replace(/\.\d+Z$/, 'Z'),
        labels: { 'kubernetes.io/hostname': name(index), 'kubernetes.io/os': 'linux', [`node-role.kubernetes.io/${index % 10 === 0 ? 'master' : 'worker'}`]: '', zone: `z${index % 3}` },
        annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
      },
      spec: { podCIDR: `10.${index >> 8}.${index & 255}.0/24` },
      status: {
        capacity: { cpu: '8', memory: '32768000Ki', pods: '110' },
        allocatable: { cpu: '8', memory: '32665600Ki', pods: '110' },
        conditions: [
          { type: 'MemoryPressure', status: 'False' },
          { type: 'DiskPressure', status: 'False' },
          { type: 'Ready', status: index % 50 === 0 ? 'False' : 'True' },
        ],
        addresses: [{ type: 'InternalIP', address: `10.1.${index >> 8}.${index & 255}` }, { type: 'Hostname', address: name(index) }],
        nodeInfo: { kernelVersion: '5.15.0', osImage: 'Ubuntu 22.04 LTS', kubeletVersion: 'v1.26.5', operatingSystem: 'linux', architecture: 'amd64' },
      },
    });
  }
  return { apiVersion: 'v1', kind: 'List', items };
}

/** One pod per node, so each listed node gets its usage annotations. */
function podList(from, to) {
  const items = [];
  for (let index = from; index < to; index++) {
    items.push({
      metadata: { name: `pod-${index}`, namespace: 'bench' },
      spec: { nodeName: name(index), containers: [{ name: 'c', resources: { requests: { cpu: '250m', memory: '256Mi' }, limits: { cpu: '1', memory: '1Gi' } } }] },
      status: { phase: 'Running' },
    });
  }
  return { apiVersion: 'v1', kind: 'List', items };
}

function cliImport(mongoUri, kind, list) {
  const file = join(dir, `${kind}.json`);
  writeFileSync(file, JSON.stringify(list));
  const started = Date.now();
  execFileSync(process.execPath, ['dist/cli.js', 'cluster', kind, 'import', file], {
    env: { ...process.env, ...BENCH_SECRETS, NODE_ENV: 'production', CLUSTER_ADMIN_PASSWORD: 'P@88w0rd', MONGODB_URI: mongoUri },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  console.log(`imported ${list.items.length} ${kind} in ${Date.now() - started} ms`);
}

const env = await startBenchEnvironment({ env: { CLUSTER_REGISTER_HOST_NODE: 'false', TRAINING_WORKER: 'false' } });
const rows = [];
try {
  const form = new URLSearchParams({ grant_type: 'password', username: 'admin', password: 'P@88w0rd', client_id: 'kubesphere', client_secret: 'kubesphere' });
  const { access_token: token } = await (await fetch(`${env.url}/oauth/token`, { method: 'POST', body: form })).json();
  const headers = { authorization: `Bearer ${token}` };

  const run = async (stored, page) => {
    const path = `/kapis/resources.platform.io/v1alpha3/nodes?limit=10&page=${page}&sortBy=name`;
    // The first request after an import (re)loads the index: timed on its own, not measured.
    const started = Date.now();
    const first = await fetch(`${env.url}${path}`, { headers });
    const bytes = Buffer.from(await first.arrayBuffer());
    if (first.status !== 200) throw new Error(`${first.status} ${bytes.toString()}`);
    console.log(`first request after the import: ${Date.now() - started} ms, ${bytes.length} bytes`);
    const limit = await startLimit({ '/*': { contentType: first.headers.get('content-type'), bytes } });
    try {
      for (const connections of CONNECTIONS) {
        const limitBefore = await measure({ url: `${limit.url}${path}`, duration, connections });
        const ours = await measure({ url: `${env.url}${path}`, headers, duration, connections });
        const bare = fasterOf(limitBefore, await measure({ url: `${limit.url}${path}`, duration, connections }));
        const row = {
          stored,
          page,
          connections,
          ...againstLimit(ours, bare),
        };
        rows.push(row);
        console.log(JSON.stringify(row));
      }
    } finally {
      await limit.stop();
    }
  };

  cliImport(env.mongoUri, 'nodes', nodeList(0, 1000));
  cliImport(env.mongoUri, 'pods', podList(0, 1000));
  await run(1000, 50);
  cliImport(env.mongoUri, 'nodes', nodeList(1000, 10000));
  await run(10000, 50);
  await run(10000, 999);
  for (const connections of CONNECTIONS) {
    const small = rows.find((row) => row.stored === 1000 && row.connections === connections);
    const large = rows.find((row) => row.stored === 10000 && row.page === 50 && row.connections === connections);
    console.log(JSON.stringify({ connections, '10k/1k req/s': (large['req/s'] / small['req/s']).toFixed(2), '10k/1k p50': (large['p50 ms'] / Math.max(small['p50 ms'], 1)).toFixed(2), 'within 2x': large['req/s'] * 2 >= small['req/s'] }));
  }
} finally {
  await env.stop();
  rmSync(dir, { recursive: true, force: true });
}
console.table(rows);
