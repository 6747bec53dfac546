// Shared pieces of the load scripts: start the built server on a local database, start a bare
// Fastify baseline doing the same database work in a process of its own (its routes in a
// bench/baselines/ module), load both with autocannon (loopback only, bounded duration) and
// print the ratio. Usage in a script:
//   const env = await startBenchEnvironment();           // DB + built server
//   const base = await startBaselineProcess('bench/baselines/readyz.mjs', { mongoUri: env.mongoUri });
//   const ours = await measure({ url: env.url + '/readyz' });
//   const bare = await measure({ url: base.url + '/ping' });
//   report('GET /readyz', ours, bare); await base.stop(); await env.stop();
import autocannon from 'autocannon';
import { MongoClient } from 'mongodb';
import { spawn, execSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalDatabase, freePort } from '../scripts/local-db.mjs';

/** Seconds per measurement from BENCH_SECONDS; unset, empty or invalid gives the fallback. */
export function benchSeconds(fallback) {
  const value = Number(process.env.BENCH_SECONDS);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

/**
 * BENCH_WARMUP_SECONDS (default 10): each server's unmeasured load before it is measured. V8
 * optimises a service of this size for about 10 s of load (a chat turn's CPU halves meanwhile), a
 * bare route at once; a deployed server runs warm. 0 measures cold servers.
 */
export function warmupSeconds() {
  const value = process.env.BENCH_WARMUP_SECONDS;
  return value === undefined ? 10 : Number(value) || 0;
}

export const BENCH_SECRETS = {
  TOKEN_KEY: 'bench-token-key-0123456789abcdef',
  ROOT_KEY: 'bench-root-key-0123456789abcdef',
  CLUSTER_JWT_SECRET: 'bench-cluster-secret-0123456789',
  DEFAULT_ROOT_PSW: 'bench-root-password',
};

async function waitForHealthy(url, child, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with code ${child.exitCode}`);
    try {
      const response = await fetch(`${url}/readyz`);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('server did not become ready in time');
}

/** Builds the service, starts a temporary local database (unless MONGODB_URI) and the server. */
export async function startBenchEnvironment({ env = {}, build = true } = {}) {
  if (build) execSync('npx tsc -p tsconfig.build.json', { stdio: 'inherit' });
  const database = process.env.MONGODB_URI ? null : await startLocalDatabase();
  const mongoUri = process.env.MONGODB_URI ?? `${database.uri}bench_${Date.now()}`;
  const port = await freePort();
  // BENCH_PROFILE_DIR: the server runs under bench/profiled-server.mjs; `env.profiled(fn)` writes a
  // V8 CPU profile of just that phase there (open it in Chrome DevTools).
  const profiling = Boolean(process.env.BENCH_PROFILE_DIR);
  const server = spawn(process.execPath, [profiling ? 'bench/profiled-server.mjs' : 'dist/server.js'], {
    env: { ...process.env, ...BENCH_SECRETS, LOG_LEVEL: 'warn', NODE_ENV: 'production', CLUSTER_ADMIN_PASSWORD: 'P@88w0rd', ...env, MONGODB_URI: mongoUri, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHealthy(url, server);
  const client = new MongoClient(mongoUri);
  await client.connect();
  // A bench killed by a signal (timeout, Ctrl-C) must not leave its server and database behind.
  const killChildren = () => {
    server.kill('SIGKILL');
    database?.process.kill('SIGKILL');
  };
  const onSignal = () => {
    killChildren();
    process.exit(130);
  };
  process.once('exit', killChildren);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    url,
    mongoUri,
    /** The server process (its CPU time per request: `measure({ pid })`). */
    pid: server.pid,
    db: client.db(),
    /** Runs `phase`, profiling the server meanwhile when BENCH_PROFILE_DIR is set. */
    async profiled(phase) {
      if (!profiling) return phase();
      server.kill('SIGUSR2');
      await new Promise((resolve) => setTimeout(resolve, 100));
      try {
        return await phase();
      } finally {
        server.kill('SIGUSR2');
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    },
    stop: async () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      await client.db().dropDatabase().catch(() => undefined);
      await client.close();
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
      if (database) await database.stop();
    },
  };
}

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on every usual Linux). */
const CLOCK_TICKS = (() => {
  try {
    return Number(execSync('getconf CLK_TCK', { stdio: ['ignore', 'pipe', 'ignore'] }).toString()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU seconds (user + system) process `pid` has used so far; null where /proc cannot tell. */
function cpuSecondsOf(pid) {
  try {
    // Fields after the command name: state is the 1st, utime the 12th, stime the 13th.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return null;
  }
}

/**
 * Loads one URL for a bounded time; returns requests/s and latency percentiles (ms). With the
 * serving process's `pid`, also its CPU time per request in µs (`cpuMicros`): steadier than
 * throughput on 2 shared cores, where how often the load generator sleeps moves req/s a lot.
 */
export async function measure({ url, method = 'GET', headers = {}, body, connections = 10, duration = 5, requests, pid }) {
  const cpuBefore = pid ? cpuSecondsOf(pid) : null;
  const result = await load({ url, method, headers, body, connections, duration, requests });
  const cpuAfter = pid ? cpuSecondsOf(pid) : null;
  const cpuMicros = cpuBefore !== null && cpuAfter !== null && result.total > 0 ? ((cpuAfter - cpuBefore) * 1e6) / result.total : null;
  return { ...result, cpuMicros };
}

function load({ url, method, headers, body, connections, duration, requests }) {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url,
        method,
        headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
        connections,
        duration,
        requests,
      },
      (error, result) => {
        if (error) return reject(error);
        const failures = result.non2xx + result.errors + result.timeouts;
        resolve({
          requestsPerSecond: result.requests.average,
          p50: result.latency.p50,
          p99: result.latency.p99,
          total: result.requests.total,
          failures,
        });
      },
    );
  });
}

/** Prints one comparison line and returns it for the README table. */
export function report(name, ours, baseline) {
  const ratio = (a, b) => (b > 0 ? (a / b).toFixed(2) : 'n/a');
  const row = {
    route: name,
    'req/s': Math.round(ours.requestsPerSecond),
    'baseline req/s': Math.round(baseline.requestsPerSecond),
    'throughput ratio': ratio(ours.requestsPerSecond, baseline.requestsPerSecond),
    'p50 ms': ours.p50,
    'p99 ms': ours.p99,
    'baseline p99 ms': baseline.p99,
    'p99 ratio': ratio(ours.p99, baseline.p99),
    'non-2xx/errors': ours.failures,
  };
  console.log(JSON.stringify(row));
  return row;
}

/**
 * A bare Fastify server in its own process (bench/baseline-server.mjs), routes from `module`
 * (bench/baselines/*.mjs) given `options` (JSON; `mongoUri` connects a database).
 */
export async function startBaselineProcess(module, options) {
  const optionsFile = join(mkdtempSync(join(tmpdir(), 'bench-baseline-')), 'options.json');
  writeFileSync(optionsFile, JSON.stringify(options));
  const child = spawn(process.execPath, ['bench/baseline-server.mjs', module, optionsFile], { stdio: ['ignore', 'pipe', 'inherit'] });
  process.once('exit', () => child.kill('SIGKILL'));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes('\n')) resolve(out.trim());
    });
    child.once('exit', (code) => reject(new Error(`baseline server ${module} exited with ${code}`)));
  });
  return {
    url,
    pid: child.pid,
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * "The limit": a bare Fastify route answering recorded bytes from memory, in a process of its
 * own as the service is. `routes` maps a path (`/*` for any) to the `{contentType, bytes}` our
 * server answered there, and optionally the other response `headers` it sent.
 */
export function startLimit(routes) {
  const list = Object.entries(routes).map(([path, { contentType, bytes, headers }]) => ({ path, contentType, headers, base64: Buffer.from(bytes).toString('base64') }));
  return startBaselineProcess('bench/baselines/recorded-bytes.mjs', { routes: list });
}

/**
 * The faster of two measurements of the limit, taken before and after ours: on 2 cores its
 * throughput swings by half from run to run (where the scheduler puts it and autocannon), and the
 * faster is what a bare route can do, so ratios are not flattered by a slow limit run.
 */
export function fasterOf(first, second) {
  return first.requestsPerSecond >= second.requestsPerSecond ? first : second;
}

/** The figures a row reports for our route next to the limit's. */
export function againstLimit(ours, limit) {
  const row = {
    'req/s': Math.round(ours.requestsPerSecond),
    'p50 ms': ours.p50,
    'p99 ms': ours.p99,
    'limit req/s': Math.round(limit.requestsPerSecond),
    'ratio to limit': (ours.requestsPerSecond / limit.requestsPerSecond).toFixed(3),
    errors: ours.failures,
  };
  // Server CPU per request, ours and the limit's; their quotient is the ratio both would reach
  // if each server had a core to itself and nothing else limited them.
  if (ours.cpuMicros != null && limit.cpuMicros != null) {
    row['CPU µs/req'] = Math.round(ours.cpuMicros);
    row['limit CPU µs/req'] = Math.round(limit.cpuMicros);
    row['CPU ratio'] = (limit.cpuMicros / ours.cpuMicros).toFixed(3);
  }
  return row;
}
