// The hot routes of the performance issue, each against "the limit": a bare Fastify route that
// answers the very same bytes from memory. Reported at 1 and 16 connections:
//   - POST /api/core/app/list, 301 apps at the team root, read by a plain member with a session;
//   - GET /kapis/.../nodes?limit=10&page=5, 1,000 stored nodes, with a bearer token;
//   - POST /api/v1/chat/completions with an app-bound API key, against a local fake LLM. A turn
//     cannot be answered from memory, so this route is also compared with a bare route doing the
//     same outside work: one call to the same fake LLM, the same bytes, then a usage record
//     written behind the answer in 100 ms batches (bench/baselines/completions-same-work.mjs).
// The limit is measured before and after ours, and the faster run is kept (lib.mjs fasterOf). A
// second limit answers the same response headers too (security headers, CORS, request id), so the
// client parses the very same response: "ratio to same response".
// GET /healthz is measured too: it does nothing, so its ratio is the most any route can reach.
// Each row also gives the server's CPU time per request, ours and the limit's (from /proc, on
// Linux), and their quotient: steadier than req/s here, where 2 shared cores make throughput
// depend on how often the load generator sleeps (each wake-up costs the writer a system call).
// The fake LLM runs in this script's process, so a turn's CPU is the service's own.
// Every server is first loaded on each route, unmeasured, for BENCH_WARMUP_SECONDS (default 10) at
// 16 connections: V8 optimises a large service's hot path for several seconds (a chat turn's CPU
// fell from 1,555 to ~700 µs over its first 15 s of load here), a bare route's at once, and a
// deployed server runs warm. BENCH_WARMUP_SECONDS=0 measures cold servers, as the script did before.
// Usage: npm run build && node bench/hot-routes.mjs  (BENCH_SECONDS, default 5; BENCH_ONLY=text
// measures only the matching cases; BENCH_PROFILE_DIR=dir writes one CPU profile per measurement)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHAT_GRAPH, FAKE_LLM_ANSWER, fakeLlmModels, nodeItems, postPlatform } from './fixtures.mjs';
import { againstLimit, BENCH_SECRETS, benchSeconds, fasterOf, measure, startBaselineProcess, startBenchEnvironment, startLimit, warmupSeconds } from './lib.mjs';

const duration = benchSeconds(5);
/** BENCH_ONLY: measure only the cases whose name contains it (seeding is the same). */
const only = process.env.BENCH_ONLY;
const CONNECTIONS = [1, 16];
const warmup = warmupSeconds();
const APPS_AT_ROOT = 301;
const NODES = 1000;
const dir = mkdtempSync(join(tmpdir(), 'bench-hot-'));

/** A local OpenAI-compatible LLM answering at once (non-streaming chat completions). */
async function startFakeLlm() {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(FAKE_LLM_ANSWER));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { baseUrl: `http://127.0.0.1:${server.address().port}/v1`, close: () => new Promise((resolve) => server.close(resolve)) };
}

function cli(mongoUri, args) {
  const out = execFileSync(process.execPath, ['dist/cli.js', ...args], {
    env: { ...process.env, ...BENCH_SECRETS, NODE_ENV: 'production', CLUSTER_ADMIN_PASSWORD: 'P@88w0rd', MONGODB_URI: mongoUri },
    stdio: ['ignore', 'pipe', 'inherit'],
  }).toString();
  return JSON.parse(out.slice(out.indexOf('{')));
}

const call = (env, path, options) => postPlatform(env.url, path, options);

const llm = await startFakeLlm();
const configFile = join(dir, 'models.json');
writeFileSync(configFile, fakeLlmModels(`${llm.baseUrl}/chat/completions`));
const env = await startBenchEnvironment({ env: { CLUSTER_REGISTER_HOST_NODE: 'false', TRAINING_WORKER: 'false', MODEL_CONFIG_PATH: configFile, PLAN_MAX_APPS: '100000' } });
const rows = [];
try {
  // Seed: an owner and a read-only member; 301 apps at the root (300 private, one shared chat app).
  const owner = cli(env.mongoUri, ['user', 'create', '--username', 'hot-owner', '--password', 'bench-password-1']);
  cli(env.mongoUri, ['user', 'create', '--username', 'hot-member', '--password', 'bench-password-1', '--team', owner.teamId, '--role', 'member', '--permission', '4']);
  const ownerToken = (await call(env, '/api/support/user/account/loginByPassword', { body: { username: 'hot-owner', password: 'bench-password-1' } })).token;
  const memberToken = (await call(env, '/api/support/user/account/loginByPassword', { body: { username: 'hot-member', password: 'bench-password-1' } })).token;
  const graph = CHAT_GRAPH;
  const started = Date.now();
  let chatAppId;
  for (let i = 0; i < APPS_AT_ROOT; i++) {
    const id = await call(env, '/api/core/app/create', { token: ownerToken, body: { name: `app ${i}`, type: 'advanced', modules: graph.nodes, edges: graph.edges } });
    if (i % 3 === 0) await call(env, '/api/core/app/update', { token: ownerToken, body: { appId: id, defaultPermission: 4 } });
    chatAppId ??= id;
  }
  await call(env, `/api/core/app/version/publish?appId=${chatAppId}`, { token: ownerToken, body: { ...graph, chatConfig: {}, isPublish: true, versionName: 'v1' } });
  const appKey = await call(env, '/api/support/openapi/create', { token: ownerToken, body: { name: 'bench', appId: chatAppId } });
  const nodesFile = join(dir, 'nodes.json');
  writeFileSync(nodesFile, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: nodeItems(NODES) }));
  cli(env.mongoUri, ['cluster', 'nodes', 'import', nodesFile]);
  const form = new URLSearchParams({ grant_type: 'password', username: 'admin', password: 'P@88w0rd', client_id: 'kubesphere', client_secret: 'kubesphere' });
  const bearer = (await (await fetch(`${env.url}/oauth/token`, { method: 'POST', body: form })).json()).access_token;
  console.log(`seeded ${APPS_AT_ROOT} apps and ${NODES} nodes in ${Date.now() - started} ms`);

  const cases = [
    // No work at all: what the hooks every route shares cost next to a bare route (the floor of each ratio).
    { name: 'GET /healthz (no route work: the floor)', path: '/healthz', method: 'GET', headers: {} },
    { name: 'POST /api/core/app/list (301 apps at root, member)', path: '/api/core/app/list', method: 'POST', headers: { token: memberToken }, body: { parentId: '' } },
    { name: 'GET nodes limit=10 page=5 (1,000 nodes)', path: '/kapis/resources.platform.io/v1alpha3/nodes?limit=10&page=5&sortBy=name', method: 'GET', headers: { authorization: `Bearer ${bearer}` } },
    { name: 'POST /api/v1/chat/completions (app key, fake LLM)', path: '/api/v1/chat/completions', method: 'POST', headers: { authorization: `Bearer ${appKey}` }, body: { messages: [{ role: 'user', content: 'hello' }] } },
  ];
  const recorded = {};
  for (const item of cases) {
    const response = await fetch(`${env.url}${item.path}`, { method: item.method, headers: { ...(item.body ? { 'content-type': 'application/json' } : {}), ...item.headers }, body: item.body ? JSON.stringify(item.body) : undefined });
    const bytes = Buffer.from(await response.arrayBuffer());
    if (response.status !== 200) throw new Error(`${item.name}: ${response.status} ${bytes.toString()}`);
    // Node writes these itself; the rest (security headers, CORS, request id) the same-response limit repeats.
    const own = new Set(['date', 'connection', 'keep-alive', 'content-length', 'content-type', 'transfer-encoding']);
    const headers = Object.fromEntries([...response.headers].filter(([name]) => !own.has(name)));
    recorded[item.path.split('?')[0]] = { contentType: response.headers.get('content-type'), bytes, headers };
    console.log(`${item.name}: ${bytes.length} bytes`);
  }
  const bodyOnly = Object.fromEntries(Object.entries(recorded).map(([path, { contentType, bytes }]) => [path, { contentType, bytes }]));
  const limit = await startLimit(bodyOnly);
  const sameResponse = await startLimit(recorded);
  const completions = recorded['/api/v1/chat/completions'];
  const sameWork = await startBaselineProcess('bench/baselines/completions-same-work.mjs', {
    mongoUri: env.mongoUri,
    llmUrl: llm.baseUrl,
    contentType: completions.contentType,
    base64: completions.bytes.toString('base64'),
  });
  try {
    for (const item of cases) {
      if (only && !item.name.includes(only)) continue;
      if (warmup > 0) {
        const servers = [limit.url, sameResponse.url, env.url, ...(item.path === '/api/v1/chat/completions' ? [sameWork.url] : [])];
        for (const base of servers) await measure({ url: `${base}${item.path}`, method: item.method, headers: item.headers, body: item.body, duration: warmup, connections: 16 });
      }
      for (const connections of CONNECTIONS) {
        const request = { method: item.method, headers: item.headers, body: item.body, duration, connections };
        const limitBefore = await measure({ url: `${limit.url}${item.path}`, pid: limit.pid, ...request });
        const sameBefore = await measure({ url: `${sameResponse.url}${item.path}`, ...request });
        const ours = await env.profiled(() => measure({ url: `${env.url}${item.path}`, pid: env.pid, ...request }));
        const bare = fasterOf(limitBefore, await measure({ url: `${limit.url}${item.path}`, pid: limit.pid, ...request }));
        const same = fasterOf(sameBefore, await measure({ url: `${sameResponse.url}${item.path}`, ...request }));
        const row = {
          route: item.name,
          connections,
          ...againstLimit(ours, bare),
          'same-response limit req/s': Math.round(same.requestsPerSecond),
          'ratio to same response': (ours.requestsPerSecond / same.requestsPerSecond).toFixed(3),
        };
        if (item.path === '/api/v1/chat/completions') {
          const same = await measure({ url: `${sameWork.url}${item.path}`, pid: sameWork.pid, ...request });
          row['same-work req/s'] = Math.round(same.requestsPerSecond);
          row['ratio to same work'] = (ours.requestsPerSecond / same.requestsPerSecond).toFixed(3);
          if (same.cpuMicros != null && ours.cpuMicros != null) row['same-work CPU ratio'] = (same.cpuMicros / ours.cpuMicros).toFixed(3);
        }
        rows.push(row);
        console.log(JSON.stringify(row));
      }
    }
  } finally {
    await limit.stop();
    await sameResponse.stop();
    await sameWork.stop();
  }
} finally {
  await env.stop();
  await llm.close();
}
console.table(rows);
