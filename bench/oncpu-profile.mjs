// Where the node page's CPU goes, ours next to the limit's, from ON-CPU samples (Linux `perf`,
// software clock, with Node's --perf-basic-prof JIT maps). The V8 profiles of BENCH_PROFILE_DIR
// sample wall time: on 2 shared cores a server descheduled inside `writev` (the load generator
// woken on loopback preempts it) is charged to `writev`, which once made our own hooks look like
// under 5% of the page; on-CPU samples charge only the time the server really ran.
// Prints, for each server, its CPU per request and the share of samples under each named frame
// (inclusive, and "own": not counting the rest of the request that a hook's `done()` runs).
// Usage: npm run build && node bench/oncpu-profile.mjs  (needs `perf`: Debian's linux-perf;
// BENCH_SECONDS, default 5; BENCH_PATH, default the node page of bench/hot-routes.mjs; BENCH_TOP=n
// also lists the n frames most often on top of the stack: where the time goes beyond FRAMES)
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeItems } from './fixtures.mjs';
import { BENCH_SECRETS, benchSeconds, measure, startBenchEnvironment, startLimit } from './lib.mjs';

const duration = benchSeconds(5);
const CONNECTIONS = 16;
/** Frames reported (substrings of perf's symbol names): our hooks and route, and Node's header writing. */
const FRAMES = [
  'plugins/security-headers.js',
  'plugins/metrics.js',
  'plugins/request-body.js',
  'plugins/answer-memo.js',
  'dist/app.js',
  'cluster/index.js',
  'cluster/nodes/nodes.routes.js',
  'infra/credential-cache.js',
  'infra/stamped-read-model.js',
  'writeHead node:_http_server',
  '_storeHeader node:_http_outgoing',
  'writev',
  'Heap::CollectGarbage',
];

try {
  execFileSync('perf', ['--version'], { stdio: 'ignore' });
} catch {
  console.error('perf is not installed (Debian: apt-get install linux-perf)');
  process.exit(1);
}
// The servers write /tmp/perf-<pid>.map, which perf reads to name JIT-compiled JavaScript.
process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --perf-basic-prof`.trim();
const dir = mkdtempSync(join(tmpdir(), 'bench-oncpu-'));
const env = await startBenchEnvironment({ env: { CLUSTER_REGISTER_HOST_NODE: 'false', TRAINING_WORKER: 'false' } });
try {
  const nodesFile = join(dir, 'nodes.json');
  writeFileSync(nodesFile, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: nodeItems(1000) }));
  execFileSync(process.execPath, ['dist/cli.js', 'cluster', 'nodes', 'import', nodesFile], {
    env: { ...process.env, ...BENCH_SECRETS, NODE_ENV: 'production', CLUSTER_ADMIN_PASSWORD: 'P@88w0rd', MONGODB_URI: env.mongoUri },
    stdio: 'ignore',
  });
  const form = new URLSearchParams({ grant_type: 'password', username: 'admin', password: 'P@88w0rd', client_id: 'kubesphere', client_secret: 'kubesphere' });
  const bearer = (await (await fetch(`${env.url}/oauth/token`, { method: 'POST', body: form })).json()).access_token;
  const path = process.env.BENCH_PATH ?? '/kapis/resources.platform.io/v1alpha3/nodes?limit=10&page=5&sortBy=name';
  const headers = { authorization: `Bearer ${bearer}` };
  const response = await fetch(`${env.url}${path}`, { headers });
  const bytes = Buffer.from(await response.arrayBuffer());
  if (response.status !== 200) throw new Error(`${path}: ${response.status} ${bytes.toString()}`);
  const limit = await startLimit({ [path.split('?')[0]]: { contentType: response.headers.get('content-type'), bytes } });
  try {
    for (const [name, url, pid] of [
      ['limit', `${limit.url}${path}`, limit.pid],
      ['ours', `${env.url}${path}`, env.pid],
    ]) {
      await measure({ url, headers, duration: 2, connections: CONNECTIONS }); // warm-up: JIT, memo
      const data = join(dir, `${name}.data`);
      const perf = spawn('perf', ['record', '-e', 'cpu-clock', '-F', '2000', '-g', '-p', String(pid), '-o', data], { stdio: 'ignore' });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const result = await measure({ url, headers, duration, connections: CONNECTIONS, pid });
      perf.kill('SIGINT');
      await new Promise((resolve) => perf.once('exit', resolve));
      console.log(`\n${name}: ${Math.round(result.requestsPerSecond)} req/s, ${Math.round(result.cpuMicros)} µs CPU per request at ${CONNECTIONS} connections`);
      report(execFileSync('perf', ['script', '-i', data], { maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] }).toString());
    }
  } finally {
    await limit.stop();
  }
} finally {
  await env.stop();
}

/** Share of samples under each of FRAMES: inclusive, and its own (not under a later hook it calls). */
function report(script) {
  const stacks = script
    .split('\n\n')
    .map((sample) => sample.split('\n').slice(1).map((line) => line.trim().replace(/^[0-9a-f]+ /, '')))
    .filter((frames) => frames.length > 0);
  for (const frame of FRAMES) {
    let inclusive = 0;
    let own = 0;
    for (const frames of stacks) {
      const at = frames.findLastIndex((f) => f.includes(frame));
      if (at < 0) continue;
      inclusive += 1;
      // A hook's done() runs the next hook and the rest of the request inside it (Fastify's hook
      // iterator): what lies under that iterator is not the hook's own work.
      if (!frames.slice(0, at).some((f) => f.includes('hookIterator') || f.includes('onSendEnd'))) own += 1;
    }
    const percent = (n) => ((100 * n) / stacks.length).toFixed(1).padStart(5);
    console.log(`${percent(inclusive)}% inclusive ${percent(own)}% own  ${frame}`);
  }
  const top = Number(process.env.BENCH_TOP) || 0;
  if (top === 0) return;
  // perf names a JIT frame with its offset and a library frame with its file: neither tells frames apart.
  const bySelf = new Map();
  for (const [leaf] of stacks) {
    const name = leaf.replace(/\+0x[0-9a-f]+/, '').replace(/ \(.*\)$/, '');
    bySelf.set(name, (bySelf.get(name) ?? 0) + 1);
  }
  console.log(`  most often on top of the stack:`);
  for (const [name, n] of [...bySelf].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${((100 * n) / stacks.length).toFixed(1).padStart(5)}%  ${name.slice(0, 140)}`);
}
