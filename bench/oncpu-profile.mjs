// Where a hot route's CPU goes (the node page, or a chat turn), ours next to the limit's, from ON-CPU samples (Linux `perf`,
// software clock, with Node's --perf-basic-prof JIT maps). The V8 profiles of BENCH_PROFILE_DIR
// sample wall time: on 2 shared cores a server descheduled inside `writev` (the load generator
// woken on loopback preempts it) is charged to `writev`, which once made our own hooks look like
// under 5% of the page; on-CPU samples charge only the time the server really ran.
// Prints, for each server, its CPU per request and the share of samples under each named frame
// (inclusive, and "own": not counting the rest of the request that a hook's `done()` runs).
// BENCH_ROUTE=completions profiles a chat turn instead (app key, a fake LLM in a process of its
// own), next to the same-work route of bench/hot-routes.mjs (the same LLM call and usage insert)
// rather than a route answering from memory.
// Usage: npm run build && node bench/oncpu-profile.mjs  (needs `perf`: Debian's linux-perf;
// BENCH_SECONDS, default 5; BENCH_PATH, default the node page of bench/hot-routes.mjs; BENCH_TOP=n
// also lists the n frames most often on top of the stack: where the time goes beyond FRAMES;
// BENCH_WARMUP_SECONDS, default 10: unprofiled load first, while V8 still optimises the hot path)
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeLlmModels, nodeItems, seedChatCompletion } from './fixtures.mjs';
import { BENCH_SECRETS, benchSeconds, measure, startBaselineProcess, startBenchEnvironment, startLimit, warmupSeconds } from './lib.mjs';

const duration = benchSeconds(5);
const CONNECTIONS = 16;
const warmup = warmupSeconds();
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
  // A chat turn's parts (BENCH_ROUTE=completions).
  'platform/auth/authenticator.js',
  'domain/workflow/dispatch.js',
  'infra/provider-client.js',
  'writeHead node:_http_server',
  '_storeHeader node:_http_outgoing',
  'writev',
  // Inside writev: waking the load generator's socket reader. It costs more the more often the
  // generator is found asleep, i.e. the slower the server: 11 µs a request for ours, 4 for the limit.
  'sock_def_readable',
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
const chat = process.env.BENCH_ROUTE === 'completions';
const serverEnv = { CLUSTER_REGISTER_HOST_NODE: 'false', TRAINING_WORKER: 'false' };
const llm = chat ? await startBaselineProcess('bench/baselines/fake-llm.mjs', {}) : undefined;
if (llm) {
  serverEnv.MODEL_CONFIG_PATH = join(dir, 'models.json');
  writeFileSync(serverEnv.MODEL_CONFIG_PATH, fakeLlmModels(`${llm.url}/v1/chat/completions`));
}
const env = await startBenchEnvironment({ env: serverEnv });
const cli = (args) =>
  execFileSync(process.execPath, ['dist/cli.js', ...args], {
    env: { ...process.env, ...BENCH_SECRETS, NODE_ENV: 'production', CLUSTER_ADMIN_PASSWORD: 'P@88w0rd', MONGODB_URI: env.mongoUri },
    stdio: ['ignore', 'pipe', 'ignore'],
  }).toString();
try {
  const request = chat ? await seedChatCompletion(env.url, cli) : await seedNodePage();
  const { path, method, headers, body } = request;
  const response = await fetch(`${env.url}${path}`, { method, headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body && JSON.stringify(body) });
  const bytes = Buffer.from(await response.arrayBuffer());
  if (response.status !== 200) throw new Error(`${path}: ${response.status} ${bytes.toString()}`);
  const contentType = response.headers.get('content-type');
  const limit = chat
    ? await startBaselineProcess('bench/baselines/completions-same-work.mjs', { mongoUri: env.mongoUri, llmUrl: `${llm.url}/v1`, contentType, base64: bytes.toString('base64') })
    : await startLimit({ [path.split('?')[0]]: { contentType, bytes } });
  try {
    for (const [name, url, pid] of [
      [chat ? 'same-work route' : 'limit', `${limit.url}${path}`, limit.pid],
      ['ours', `${env.url}${path}`, env.pid],
    ]) {
      if (warmup > 0) await measure({ url, method, headers, body, duration: warmup, connections: CONNECTIONS }); // JIT, memo
      const data = join(dir, `${name}.data`);
      const perf = spawn('perf', ['record', '-e', 'cpu-clock', '-F', '2000', '-g', '-p', String(pid), '-o', data], { stdio: 'ignore' });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const result = await measure({ url, method, headers, body, duration, connections: CONNECTIONS, pid });
      perf.kill('SIGINT');
      await new Promise((resolve) => perf.once('exit', resolve));
      console.log(`\n${name}: ${Math.round(result.requestsPerSecond)} req/s, ${Math.round(result.cpuMicros)} µs CPU per request at ${CONNECTIONS} connections`);
      const script = execFileSync('perf', ['script', '-i', data], { maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] }).toString();
      report(renameJitFrames(script, `/tmp/perf-${pid}.map`));
    }
  } finally {
    await limit.stop();
  }
} finally {
  await env.stop();
  await llm?.stop();
}

/** 1,000 nodes and a cluster token: the node page's request (BENCH_PATH, else page 5 of 10). */
async function seedNodePage() {
  const nodesFile = join(dir, 'nodes.json');
  writeFileSync(nodesFile, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: nodeItems(1000) }));
  cli(['cluster', 'nodes', 'import', nodesFile]);
  const form = new URLSearchParams({ grant_type: 'password', username: 'admin', password: 'P@88w0rd', client_id: 'kubesphere', client_secret: 'kubesphere' });
  const bearer = (await (await fetch(`${env.url}/oauth/token`, { method: 'POST', body: form })).json()).access_token;
  const path = process.env.BENCH_PATH ?? '/kapis/resources.platform.io/v1alpha3/nodes?limit=10&page=5&sortBy=name';
  return { path, method: 'GET', headers: { authorization: `Bearer ${bearer}` } };
}

/**
 * Names each JIT frame after the newest entry of the process's perf map covering its address.
 * V8 reuses the addresses of code it dropped and the map only grows, so perf, which takes the
 * first entry, can name a frame after code that left long ago (seen: BSON serialisation "under"
 * a cookie hook, really Node's socket write).
 */
function renameJitFrames(script, mapFile) {
  const entries = readFileSync(mapFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [start, size, ...name] = line.split(' ');
      return { start: BigInt(`0x${start}`), end: BigInt(`0x${start}`) + BigInt(`0x${size}`), name: name.join(' ') };
    });
  // Elementary address ranges between all entry bounds, each named by the last entry covering it.
  const bounds = [...new Set(entries.flatMap((e) => [e.start, e.end]))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const names = new Array(bounds.length).fill(null);
  const rangeOf = (address) => {
    let low = 0;
    let high = bounds.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (bounds[middle] <= address) low = middle;
      else high = middle - 1;
    }
    return low;
  };
  for (const entry of entries) for (let i = rangeOf(entry.start); i < bounds.length && bounds[i] < entry.end; i++) names[i] = entry.name;
  return script.replace(/^(\s+)([0-9a-f]+) JS:.*?\+0x[0-9a-f]+ (\(\/tmp\/perf-\d+\.map\))$/gm, (line, indent, address, file) => {
    const at = BigInt(`0x${address}`);
    const i = rangeOf(at);
    return bounds[i] <= at && names[i] ? `${indent}${address} ${names[i]} ${file}` : line;
  });
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
