#!/usr/bin/env node
// Provides a MongoDB wire-protocol server on loopback for development and tests:
// `mongod` when it is on PATH, otherwise FerretDB 1.24 with its SQLite backend.
// Used as a library (startLocalDatabase) by the test setup and `npm run up`,
// or run directly: `node scripts/local-db.mjs [dataDir]` keeps a server running.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, cpSync, writeFileSync, rmSync, chmodSync, readdirSync, statSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join, resolve, delimiter } from 'node:path';
import { fileURLToPath } from 'node:url';

const FERRETDB_MODULE = 'github.com/FerretDB/FerretDB';
const FERRETDB_VERSION = 'v1.24.2';

function findOnPath(name) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return null;
}

function goBinary() {
  const found = findOnPath('go') ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : null);
  if (!found) throw new Error('Neither mongod nor Go is installed: install one of them to get a local database');
  return found;
}

function cacheDir() {
  const base = process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
  return join(base, 'platform-service');
}

function makeWritable(dir) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    const stats = statSync(path);
    chmodSync(path, stats.isDirectory() ? 0o755 : 0o644);
    if (stats.isDirectory()) makeWritable(path);
  }
}

/**
 * Builds FerretDB once into the user cache. `go install` of the module is not used because
 * it needs the proxy's version list (refused by some proxies) and because FerretDB's build
 * expects a version file that only its own tooling writes; so we download the exact module
 * version, copy it somewhere writable, add the version file and build.
 */
export function ensureFerretDb(log = console.error) {
  const binary = join(cacheDir(), `ferretdb-${FERRETDB_VERSION}`);
  if (existsSync(binary)) return binary;
  const go = goBinary();
  log(`[local-db] building FerretDB ${FERRETDB_VERSION} once (about a minute)...`);
  const env = { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' };
  const info = JSON.parse(execFileSync(go, ['mod', 'download', '-json', `${FERRETDB_MODULE}@${FERRETDB_VERSION}`], { env, encoding: 'utf8' }));
  if (!info.Dir) throw new Error(`go mod download gave no directory: ${info.Error ?? 'unknown error'}`);
  const work = mkdtempSync(join(tmpdir(), 'ferretdb-src-'));
  try {
    cpSync(info.Dir, work, { recursive: true });
    makeWritable(work);
    writeFileSync(join(work, 'build', 'version', 'version.txt'), `${FERRETDB_VERSION}\n`);
    mkdirSync(cacheDir(), { recursive: true });
    execFileSync(go, ['build', '-o', `${binary}.tmp`, './cmd/ferretdb'], { cwd: work, env, stdio: ['ignore', 'ignore', 'inherit'] });
    execFileSync('mv', [`${binary}.tmp`, binary]);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return binary;
}

export function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

function waitForPort(port, child, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolveWait, reject) => {
    const attempt = () => {
      if (child.exitCode !== null) return reject(new Error(`database process exited with code ${child.exitCode}`));
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => { socket.destroy(); resolveWait(); });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`database did not listen on ${port} within ${timeoutMs} ms`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

/**
 * FerretDB 1.24 pushes an equality filter down as `_jsonb->'field' @> value`, which the btree
 * indexes it creates for `createIndex` (and `_id`) cannot serve, so every find scans its table.
 * A GIN index on the same expressions can: an event trigger adds one next to each index
 * FerretDB creates, and custom plans let the planner see the field name. Measured on 20,000
 * documents: a find by `_id` 46 ms -> 5 ms, inserts about 30% slower. Only a speed-up for local
 * test and bench databases; nothing depends on it (MongoDB has real indexes).
 */
const GIN_COMPANION_SQL = `
CREATE OR REPLACE FUNCTION ferretdb_gin_companion() RETURNS event_trigger LANGUAGE plpgsql AS $fn$
DECLARE
  r record;
  def text;
  cols text;
  tbl regclass;
BEGIN
  FOR r IN SELECT objid FROM pg_event_trigger_ddl_commands() WHERE command_tag = 'CREATE INDEX' LOOP
    def := pg_get_indexdef(r.objid);
    CONTINUE WHEN def NOT LIKE '% USING btree (%_jsonb -> %';
    SELECT indrelid::regclass INTO tbl FROM pg_index WHERE indexrelid = r.objid;
    cols := regexp_replace(substring(def from 'USING btree \\((.*)\\)$'), '\\s+(DESC|ASC)', '', 'g');
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %s USING gin (%s)', 'gin_' || md5(def), tbl, cols);
  END LOOP;
END
$fn$;
CREATE EVENT TRIGGER ferretdb_gin_companion ON ddl_command_end WHEN TAG IN ('CREATE INDEX') EXECUTE FUNCTION ferretdb_gin_companion();
`;

function addGinCompanions(connection, name, log) {
  const psql = findOnPath('psql');
  if (!psql || process.env.LOCAL_DB_GIN === 'false') return;
  try {
    execFileSync(psql, [...connection, '-q', '-d', name, '-c', GIN_COMPANION_SQL, '-c', `ALTER DATABASE "${name}" SET plan_cache_mode = force_custom_plan`], { stdio: 'ignore', timeout: 10_000 });
  } catch {
    log('[local-db] could not add GIN indexes to the PostgreSQL database (finds scan tables; still correct)');
  }
}

/**
 * Commits that do not wait for their WAL flush: a database the test suite throws away needs
 * nothing to survive a PostgreSQL crash, and each FerretDB write is a commit (2.7 ms with the
 * flush, 0.2 ms without, on the VM measured). What other sessions see is unchanged; only a
 * crash of PostgreSQL itself could lose the last commits. Never for a database kept or benched.
 */
function skipCommitFlush(connection, name, log) {
  const psql = findOnPath('psql');
  if (!psql) return;
  try {
    execFileSync(psql, [...connection, '-q', '-d', name, '-c', `ALTER DATABASE "${name}" SET synchronous_commit = off`], { stdio: 'ignore', timeout: 10_000 });
  } catch {
    log('[local-db] could not turn off commit flushes for the test database (slower; still correct)');
  }
}

/**
 * A throw-away PostgreSQL database for FerretDB's PostgreSQL backend, when a local server takes
 * `createdb` (trust auth on loopback). That backend pushes filters down to indexed SQL (25x faster
 * than SQLite on filtered finds of 10,000 documents here), so tests and benches prefer it.
 */
function createTemporaryPostgres(log, { flushCommits }) {
  const createdb = findOnPath('createdb');
  const dropdb = findOnPath('dropdb');
  if (!createdb || !dropdb) return null;
  const name = `ferretdb_tmp_${process.pid}_${Date.now()}`;
  const connection = ['-h', '127.0.0.1', '-p', '5432', '-U', process.env.LOCAL_DB_PG_USER ?? 'postgres'];
  try {
    execFileSync(createdb, [...connection, name], { stdio: 'ignore', timeout: 10_000 });
  } catch {
    log('[local-db] no usable PostgreSQL on 127.0.0.1:5432: using the SQLite backend');
    return null;
  }
  addGinCompanions(connection, name, log);
  if (!flushCommits) skipCommitFlush(connection, name, log);
  return {
    url: `postgres://${process.env.LOCAL_DB_PG_USER ?? 'postgres'}@127.0.0.1:5432/${name}`,
    drop: () => {
      try {
        execFileSync(dropdb, [...connection, '--if-exists', '--force', name], { stdio: 'ignore', timeout: 30_000 });
      } catch {
        log(`[local-db] could not drop PostgreSQL database ${name}`);
      }
    },
  };
}

/**
 * Starts a database server on 127.0.0.1 and resolves with its URI and a stop function.
 * `dataDir` persists the data (SQLite files there); without it the database is temporary:
 * FerretDB's PostgreSQL backend when a local PostgreSQL allows it (LOCAL_DB_BACKEND=sqlite
 * forces SQLite), removed on stop. `flushCommits: false` (the test suite) lets that temporary
 * PostgreSQL database commit without waiting for its disk (skipCommitFlush).
 */
export async function startLocalDatabase({ dataDir, port, log = console.error, flushCommits = true } = {}) {
  const temporary = !dataDir;
  const dir = resolve(dataDir ?? mkdtempSync(join(tmpdir(), 'platform-db-')));
  mkdirSync(dir, { recursive: true });
  const listenPort = port ?? (await freePort());
  const mongod = findOnPath('mongod');
  let command;
  let args;
  let engine;
  let postgres = null;
  if (mongod) {
    engine = 'mongod';
    command = mongod;
    args = ['--dbpath', dir, '--bind_ip', '127.0.0.1', '--port', String(listenPort), '--quiet'];
  } else {
    command = ensureFerretDb(log);
    postgres = temporary && process.env.LOCAL_DB_BACKEND !== 'sqlite' ? createTemporaryPostgres(log, { flushCommits }) : null;
    engine = postgres ? 'ferretdb-postgresql' : 'ferretdb-sqlite';
    args = [
      ...(postgres ? ['--handler=postgresql', `--postgresql-url=${postgres.url}`] : ['--handler=sqlite', `--sqlite-url=file:${dir}/`]),
      `--listen-addr=127.0.0.1:${listenPort}`,
      '--telemetry=disable',
      '--log-level=error',
      '--state-dir', dir,
      '--debug-addr=-',
    ];
  }
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr = (stderr + chunk).slice(-4000); });
  try {
    await waitForPort(listenPort, child);
  } catch (error) {
    child.kill('SIGKILL');
    postgres?.drop();
    throw new Error(`${engine} failed to start: ${error.message}\n${stderr}`);
  }
  const uri = `mongodb://127.0.0.1:${listenPort}/`;
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    postgres?.drop();
    postgres = null;
    if (temporary) rmSync(dir, { recursive: true, force: true });
  };
  return { uri, engine, port: listenPort, dataDir: dir, process: child, stop };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const dataDir = process.argv[2] ?? '.data/db';
  const db = await startLocalDatabase({ dataDir, port: Number(process.env.LOCAL_DB_PORT ?? 27017) });
  console.log(`${db.engine} listening: ${db.uri} (data in ${db.dataDir})`);
  const shutdown = () => db.stop().then(() => process.exit(0));
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}
