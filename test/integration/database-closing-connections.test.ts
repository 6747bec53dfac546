import type { MongoClient } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { buildTestApp, freshDatabaseUri, type TestApp } from '../helpers/app.js';
import { authHeaders, login } from '../helpers/platform.js';
import { startTcpProxy, type TcpProxy, viaProxy } from '../helpers/tcp-proxy.js';

/**
 * A database that closes its connections (a restart, a failover, a proxy dropping them): a
 * command written to a pooled connection whose close the process had just read waited for ever
 * inside the MongoDB driver (infra/mongo-closed-write.ts). The request never answered and its
 * connection stayed checked out; with a pool of one the service stopped answering altogether.
 */
let t: TestApp | undefined;
let proxy: TcpProxy | undefined;
afterAll(async () => {
  await proxy?.reopen().catch(() => undefined);
  await t?.close();
  await proxy?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The sockets of the client's pooled connections (driver internals: test only). */
function pooledSockets(client: MongoClient): NodeJS.EventEmitter[] {
  const servers = (client as unknown as { topology?: { s?: { servers?: Map<string, { pool: { connections: Iterable<{ socket: NodeJS.EventEmitter }> } }> } } }).topology?.s?.servers;
  return [...(servers?.values() ?? [])].flatMap((server) => [...server.pool.connections].map((connection) => connection.socket));
}

describe('a request starting as the database closes its connections', () => {
  it('is answered, and later requests are served once the database is back', async () => {
    const uri = freshDatabaseUri();
    const target = new URL(uri.replace(/^mongodb:/, 'http:'));
    proxy = await startTcpProxy(target.hostname, Number(target.port));
    // One pooled connection: the request started in the window is sure to be written to it.
    t = await buildTestApp({ MONGODB_URI: `${viaProxy(uri, proxy.port)}&maxPoolSize=1` });
    const app = t.app;
    const session = await login(t, 'root', 'root-password-1');
    const createApp = () => app.inject({ method: 'POST', url: '/api/core/app/create', headers: authHeaders(session), payload: { name: 'during close', type: 'simple', modules: [], edges: [] } });

    const sockets = pooledSockets(app.mongo.client);
    expect(sockets.length).toBeGreaterThan(0);
    let answered: number | undefined;
    // Started the moment the connection reads the database's close, before the socket's own close.
    for (const socket of sockets) socket.once('end', () => void createApp().then((response) => (answered = response.statusCode)));
    await proxy.refuse();
    await sleep(1_000);
    await proxy.reopen();
    // Bounded waits, not timings: the hung request never answered at all.
    for (let i = 0; i < 300 && answered === undefined; i++) await sleep(100);
    expect(answered).toBeDefined();

    let later: number | undefined;
    for (let i = 0; i < 100 && later !== 200; i++) {
      later = (await createApp()).statusCode;
      if (later !== 200) await sleep(100);
    }
    expect(later).toBe(200);
  }, 60_000);
});
