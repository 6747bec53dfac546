// Two builds of the service, one route, the same machine at the same time: each round starts the
// "before" build and then the "after" build on one database, loads the route, and records
// throughput and the server's CPU time per request (from /proc). Alternating the two in several
// rounds is what makes a 10% change visible on a machine whose speed drifts by more than that
// between runs of bench/hot-routes.mjs.
//
// Usage: node bench/compare-builds.mjs <git revision before> [route]
//   route: completions (default; app key, a fake LLM in a process of its own), apps (core/app/list
//   of 301 apps at the root, as a read-only member), detail (core/app/detail of one of those apps,
//   as that member), nodes (page of 10 of 1,000, bearer token) or healthz. "After" is the working tree, built here.
//   BENCH_ROUNDS (default 5), BENCH_CONNECTIONS (default "1,16"), BENCH_SECONDS (default 5),
//   BENCH_WARMUP_SECONDS (default 10: each server's unmeasured load first; V8 optimises a chat turn
//   for about 10 s of load, so shorter warm-ups compare JIT warm-up as much as the code).
import { execFileSync, execSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, startLocalDatabase } from '../scripts/local-db.mjs';
import { CHAT_GRAPH, fakeLlmModels, nodeItems, postPlatform, seedChatCompletion } from './fixtures.mjs';
import { BENCH_SECRETS, benchSeconds, measure, startBaselineProcess, warmupSeconds } from './lib.mjs';

const [revision, route = 'completions'] = process.argv.slice(2);
if (!revision || !['completions', 'apps', 'detail', 'nodes', 'healthz'].includes(route)) {
  console.error('usage: node bench/compare-builds.mjs <git revision before> [completions|apps|detail|nodes|healthz]');
  process.exit(2);
}
const rounds = Number(process.env.BENCH_ROUNDS) || 5;
const connectionCounts = (process.env.BENCH_CONNECTIONS ?? '1,16').split(',').map(Number);
const warmup = warmupSeconds();
const duration = benchSeconds(5);
const root = resolve('.');
const work = mkdtempSync(join(tmpdir(), 'bench-builds-'));

/** What to undo at the end, also when interrupted: the worktree, the database, the fake LLM. */
const cleanups = [() => rmSync(work, { recursive: true, force: true })];
async function cleanUp() {
  for (const step of cleanups.splice(0).reverse()) await (async () => step())().catch(() => undefined);
}
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => cleanUp().then(() => process.exit(130)));

/** The "before" revision, checked out and built beside the working tree (sharing its node_modules). */
function buildRevision(rev) {
  const dir = join(work, 'before');
  execFileSync('git', ['worktree', 'add', '--detach', dir, rev], { stdio: 'ignore' });
  cleanups.push(() => execFileSync('git', ['worktree', 'remove', '--force', dir], { stdio: 'ignore' }));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  execSync('npx tsc -p tsconfig.build.json', { cwd: dir, stdio: 'inherit' });
  return dir;
}

/** Builds both, starts the database and the fake LLM; undoes what it did when a step fails. */
async function setUp() {
  try {
    const before = buildRevision(revision);
    execSync('npx tsc -p tsconfig.build.json', { stdio: 'inherit' });
    const database = await startLocalDatabase();
    cleanups.push(() => database.stop());
    const llm = await startBaselineProcess('bench/baselines/fake-llm.mjs', {});
    cleanups.push(() => llm.stop());
    return { before, database, llm };
  } catch (error) {
    await cleanUp();
    throw error;
  }
}

const { before, database, llm } = await setUp();
const builds = [
  { name: `before (${revision})`, dir: before },
  { name: 'after (working tree)', dir: root },
];
const mongoUri = `${database.uri}builds_${Date.now()}`;
const modelsFile = join(work, 'models.json');
writeFileSync(modelsFile, fakeLlmModels(`${llm.url}/v1/chat/completions`));
const serverEnv = { ...process.env, ...BENCH_SECRETS, LOG_LEVEL: 'warn', NODE_ENV: 'production', CLUSTER_ADMIN_PASSWORD: 'P@88w0rd', CLUSTER_REGISTER_HOST_NODE: 'false', TRAINING_WORKER: 'false', MODEL_CONFIG_PATH: modelsFile, MONGODB_URI: mongoUri };

async function startServer(build) {
  const port = await freePort();
  const child = spawn(process.execPath, [join(build.dir, 'dist/server.js')], { cwd: build.dir, env: { ...serverEnv, PORT: String(port), HOST: '127.0.0.1' }, stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  for (let attempt = 0; attempt < 300; attempt++) {
    if (child.exitCode !== null) throw new Error(`${build.name} exited with ${child.exitCode}`);
    if (await fetch(`${url}/readyz`).then((response) => response.ok, () => false)) break;
    await new Promise((done) => setTimeout(done, 200));
  }
  return {
    url,
    pid: child.pid,
    stop: () => new Promise((done) => {
      child.once('exit', done);
      child.kill('SIGKILL');
    }),
  };
}

/** Seeds through the "after" build (the data model is the same in both) and returns the request to load. */
async function seed() {
  if (route === 'healthz') return { path: '/healthz', method: 'GET', headers: {} };
  const cli = (args) => execFileSync(process.execPath, ['dist/cli.js', ...args], { env: serverEnv, stdio: ['ignore', 'pipe', 'inherit'] }).toString();
  const server = await startServer(builds[1]);
  try {
    if (route === 'nodes') {
      const file = join(work, 'nodes.json');
      writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: nodeItems(1000) }));
      cli(['cluster', 'nodes', 'import', file]);
      const form = new URLSearchParams({ grant_type: 'password', username: 'admin', password: 'P@88w0rd', client_id: 'kubesphere', client_secret: 'kubesphere' });
      const bearer = (await (await fetch(`${server.url}/oauth/token`, { method: 'POST', body: form })).json()).access_token;
      return { path: '/kapis/resources.platform.io/v1alpha3/nodes?limit=10&page=5&sortBy=name', method: 'GET', headers: { authorization: `Bearer ${bearer}` } };
    }
    if (route === 'completions') return await seedChatCompletion(server.url, cli);
    const owner = JSON.parse(cli(['user', 'create', '--username', 'builds-owner', '--password', 'bench-password-1']).replace(/^[^{]*/, ''));
    const token = (await postPlatform(server.url, '/api/support/user/account/loginByPassword', { body: { username: 'builds-owner', password: 'bench-password-1' } })).token;
    // As bench/hot-routes.mjs: 301 apps at the root, every third readable by the team, listed by a member.
    cli(['user', 'create', '--username', 'builds-member', '--password', 'bench-password-1', '--team', owner.teamId, '--role', 'member', '--permission', '4']);
    let readable;
    for (let i = 0; i < 301; i++) {
      const id = await postPlatform(server.url, '/api/core/app/create', { token, body: { name: `app ${i}`, type: 'advanced', modules: CHAT_GRAPH.nodes, edges: CHAT_GRAPH.edges } });
      if (i % 3 === 0) await postPlatform(server.url, '/api/core/app/update', { token, body: { appId: id, defaultPermission: 4 } });
      if (i === 150) readable = id;
    }
    const memberToken = (await postPlatform(server.url, '/api/support/user/account/loginByPassword', { body: { username: 'builds-member', password: 'bench-password-1' } })).token;
    if (route === 'detail') return { path: `/api/core/app/detail?appId=${readable}`, method: 'GET', headers: { token: memberToken } };
    return { path: '/api/core/app/list', method: 'POST', headers: { token: memberToken }, body: { parentId: '' } };
  } finally {
    await server.stop();
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

try {
  const request = await seed();
  const rows = [];
  for (const connections of connectionCounts) {
    const runs = builds.map(() => []);
    for (let round = 0; round < rounds; round++) {
      for (const [index, build] of builds.entries()) {
        const server = await startServer(build);
        const target = { url: `${server.url}${request.path}`, method: request.method, headers: request.headers, body: request.body, connections };
        if (warmup > 0) await measure({ ...target, duration: warmup }); // caches, JIT
        const result = await measure({ ...target, duration, pid: server.pid });
        await server.stop();
        if (result.failures > 0) throw new Error(`${build.name}: ${result.failures} failed requests`);
        runs[index].push(result);
        console.log(JSON.stringify({ build: build.name, connections, round, 'req/s': Math.round(result.requestsPerSecond), 'CPU µs/req': Math.round(result.cpuMicros) }));
      }
    }
    for (const [index, build] of builds.entries()) {
      rows.push({
        route,
        build: build.name,
        connections,
        'median req/s': Math.round(median(runs[index].map((run) => run.requestsPerSecond))),
        'median CPU µs/req': Math.round(median(runs[index].map((run) => run.cpuMicros))),
        'CPU µs/req per round': runs[index].map((run) => Math.round(run.cpuMicros)).join(' '),
      });
    }
  }
  console.table(rows);
} finally {
  await cleanUp();
}
