import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { inject } from 'vitest';
import { buildApp } from '../../src/app.js';
import { type Config, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/infra/logger.js';

/** A database URI naming a fresh database on the test server. */
export function freshDatabaseUri(): string {
  const base = new URL(inject('mongoUri').replace(/^mongodb:/, 'http:'));
  base.pathname = `/t_${randomBytes(6).toString('hex')}`;
  // Command events let tests count the database commands a request sends (command-counter.ts).
  base.searchParams.set('monitorCommands', 'true');
  return base.toString().replace(/^http:/, 'mongodb:');
}

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    MONGODB_URI: freshDatabaseUri(),
    TOKEN_KEY: 'test-token-key-0123456789abcdef',
    ROOT_KEY: 'test-root-key-0123456789abcdef',
    CLUSTER_JWT_SECRET: 'test-cluster-secret-0123456789',
    DEFAULT_ROOT_PSW: 'root-password-1',
    CLUSTER_REGISTER_HOST_NODE: 'false',
    TRAINING_WORKER: 'false',
    ...overrides,
  });
}

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  /** Every log line written so far, as text. */
  logs: () => string;
  /** Closes the app and drops its database. */
  close: () => Promise<void>;
}

/**
 * Builds the real app on a fresh database of the real test server. Use one per test file
 * (beforeAll / afterAll); logs are captured so tests can check what was written.
 */
export async function buildTestApp(
  overrides: Record<string, string> = {},
  beforeReady?: (app: FastifyInstance) => void | Promise<void>,
): Promise<TestApp> {
  const config = testConfig({ LOG_LEVEL: 'info', ...overrides });
  let captured = '';
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      captured += chunk.toString();
      callback();
    },
  });
  const app = await buildApp(config, { logger: createLogger(config.LOG_LEVEL, sink) });
  await beforeReady?.(app);
  await app.ready();
  return {
    app,
    config,
    logs: () => captured,
    close: async () => {
      // Usage records written behind answers land before the drop, not in a database re-created after it.
      await app.identity?.usage.drain();
      await app.mongo.db.dropDatabase().catch(() => undefined);
      await app.close();
    },
  };
}

/**
 * A second process of `primary`'s deployment: the real app on the same database (a replica, for
 * tests that write through one process and read through the other). Its `close` closes the app
 * only; the shared database is dropped by `primary.close()`, which should come last.
 */
export async function buildReplica(
  primary: TestApp,
  overrides: Record<string, string> = {},
  beforeReady?: (app: FastifyInstance) => void | Promise<void>,
): Promise<TestApp> {
  const replica = await buildTestApp({ ...overrides, MONGODB_URI: primary.config.MONGODB_URI }, beforeReady);
  return { ...replica, close: () => replica.app.close() };
}
