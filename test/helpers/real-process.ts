import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type Db, MongoClient } from 'mongodb';
import { freshDatabaseUri } from './app.js';

/**
 * The real server as a child process (`node --import tsx src/server.ts`), for tests that kill it
 * (`kill -9`) or run several replicas on one database. The environment is the one test/helpers/
 * app.ts gives in-process apps (fixed secrets, root password `root-password-1`), with the
 * training worker on; each start listens on a free port of 127.0.0.1.
 */
export interface RealServer {
  /** e.g. http://127.0.0.1:41234 */
  baseUrl: string;
  pid: number;
  /** Everything the process wrote so far (JSON log lines, then anything on stderr). */
  logs(): string;
  /** SIGKILL, as `kill -9`: no hook runs. Resolves once the process is gone. */
  kill9(): Promise<void>;
  /** SIGTERM (graceful close); SIGKILL if still running after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const START_TIMEOUT_MS = 60_000;
const running = new Set<ChildProcess>();
// A test that fails before its afterAll must not leave servers behind.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export const REAL_SERVER_ENV: Record<string, string> = {
  NODE_ENV: 'test',
  LOG_LEVEL: 'info',
  HOST: '127.0.0.1',
  PORT: '0',
  TOKEN_KEY: 'test-token-key-0123456789abcdef',
  ROOT_KEY: 'test-root-key-0123456789abcdef',
  CLUSTER_JWT_SECRET: 'test-cluster-secret-0123456789',
  DEFAULT_ROOT_PSW: 'root-password-1',
  CLUSTER_REGISTER_HOST_NODE: 'false',
  TRAINING_WORKER: 'true',
  SHUTDOWN_TIMEOUT_MS: '5000',
};

/** Starts the server on `mongoUri` (pass the same URI to restart on the same data). */
export async function startRealServer(mongoUri: string, env: Record<string, string> = {}): Promise<RealServer> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...REAL_SERVER_ENV, MONGODB_URI: mongoUri, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      running.delete(child);
      resolve();
    });
  });
  const listening = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start within ${START_TIMEOUT_MS} ms:\n${output}`)), START_TIMEOUT_MS);
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const found = /"msg":"listening on (http:\/\/[^"]+)"/.exec(output);
      if (found?.[1]) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`server exited during start-up (code ${child.exitCode}):\n${output}`));
    });
  });
  const signal = async (name: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(name);
    await exited;
  };
  let baseUrl: string;
  try {
    baseUrl = await listening;
    await waitFor('/healthz to answer', async () => (await fetch(`${baseUrl}/healthz`).catch(() => null))?.ok === true);
  } catch (error) {
    await signal('SIGKILL');
    throw error;
  }
  return {
    baseUrl,
    pid: child.pid ?? 0,
    logs: () => output,
    kill9: () => signal('SIGKILL'),
    async stop(graceMs = 10_000) {
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await signal('SIGTERM');
      clearTimeout(timer);
    },
  };
}

/** Polls `check` until it returns true; fails naming `what` after the deadline. */
export async function waitFor(what: string, check: () => Promise<boolean>, options: { timeoutMs?: number; intervalMs?: number } = {}): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 50));
  }
}

/** A fresh database for real servers, with a direct handle for the test's own checks. */
export async function openTestDatabase(): Promise<{ uri: string; db: Db; close(): Promise<void> }> {
  const uri = freshDatabaseUri();
  const client = await MongoClient.connect(uri);
  const db = client.db();
  return {
    uri,
    db,
    close: async () => {
      await db.dropDatabase().catch(() => undefined);
      await client.close();
    },
  };
}

/** A caller of a real server's platform API with a session (root by default). */
export async function platformCaller(server: RealServer, username = 'root', password = 'root-password-1') {
  const login = await fetch(`${server.baseUrl}/api/support/user/account/loginByPassword`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  });
  if (!login.ok) throw new Error(`login failed: ${login.status} ${await login.text()}`);
  const token = ((await login.json()) as { data: { token: string } }).data.token;
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${server.baseUrl}/api${path}`, {
      method,
      headers: { token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let json: { code?: number; data?: unknown; message?: string } = {};
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON: the status says enough
    }
    return { status: response.status, body: json, text };
  };
  return {
    call,
    /** The data of a successful call; throws with the body otherwise. */
    async ok<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
      const response = await call(method, path, body);
      if (response.status !== 200 || response.body.code !== 200) throw new Error(`${method} ${path}: expected success, got ${response.status} ${response.text}`);
      return response.body.data as T;
    },
  };
}

export type PlatformCaller = Awaited<ReturnType<typeof platformCaller>>;
