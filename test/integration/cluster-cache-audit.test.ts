import type { FastifyInstance, FastifyRequest } from 'fastify';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createAccountsRepo } from '../../src/cluster/accounts/accounts.repo.js';
import { createAccountsService } from '../../src/cluster/accounts/accounts.service.js';
import { MovableClock } from '../../src/cluster/clock.js';
import { createNodesRepo } from '../../src/cluster/nodes/nodes.repo.js';
import { createNodesService } from '../../src/cluster/nodes/nodes.service.js';
import { createPodsRepo } from '../../src/cluster/nodes/pods.repo.js';
import { CLUSTER_STAMPS, createClusterStamps } from '../../src/cluster/stamps.js';
import type { AttemptLimiter } from '../../src/infra/attempt-limiter.js';
import { bearer, cli, login, postToken } from '../fixtures/cluster/helpers.js';
import { buildTestApp, type TestApp, testConfig } from '../helpers/app.js';

/**
 * Audit of the cluster caches across processes: every write to the collections behind them
 * (accounts, tokens, nodes, pods) bumps its stamp before it answers, even when it fails part-way
 * or finds its work already done by a concurrent writer; and no cached identity or answer is
 * served to a caller it does not belong to. Two app instances share one database.
 */
let t: TestApp;
let replica: FastifyInstance;
const NODES = '/kapis/resources.platform.io/v1alpha3/nodes';
const ALIAS = '/kapis/resources.kubesphere.io/v1alpha3/nodes';
const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });

const node = (name: string, extra: { uid?: string; labels?: Record<string, string> } = {}) => ({
  metadata: { name, uid: extra.uid, creationTimestamp: '2024-03-01T00:00:00Z', labels: extra.labels ?? {} },
  status: { allocatable: { cpu: '2', memory: '4Gi' }, conditions: [{ type: 'Ready', status: 'True' }] },
});
const nodeFile = (...items: ReturnType<typeof node>[]) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
const podFile = (name: string, nodeName: string, cpu: string) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: [{ metadata: { name, namespace: 'audit' }, spec: { nodeName, containers: [{ name: 'c', resources: { requests: { cpu } } }] }, status: { phase: 'Running' } }],
  });

async function namesOn(app: FastifyInstance, token: string, query = '') {
  const response = await app.inject({ method: 'GET', url: `${NODES}${query}`, headers: bearer(token) });
  expect(response.statusCode, response.body).toBe(200);
  return (response.json() as { items: { metadata: { name: string } }[] }).items.map((item) => item.metadata.name);
}

const statusOn = async (app: FastifyInstance, token: string, url = `${NODES}?limit=1`) => (await app.inject({ method: 'GET', url, headers: bearer(token) })).statusCode;

/** Deletes a user's allow-list entries as another process's revocation does, before its bump lands. */
const deleteEntriesBehindTheStamp = (username: string) => t.app.mongo.db.collection('cluster_tokens').deleteMany({ username });

beforeAll(async () => {
  t = await buildTestApp();
  replica = await buildApp(testConfig({ MONGODB_URI: t.config.MONGODB_URI }), { startupTasks: false });
  await replica.ready();
  await cli(t.app, ['user', 'add', '--username', 'uma', '--email', 'uma@example.com', '--password', 'Uma-pass-1']);
  await cli(t.app, ['user', 'add', '--username', 'vlad', '--email', 'vlad@example.com', '--password', 'Vlad-pass-1']);
  await cli(t.app, ['user', 'add', '--username', 'wren', '--email', 'wren@example.com', '--password', 'Wren-pass-1']);
  await t.app.cluster.nodes.importNodes(nodeFile(node('audit-base')));
});

afterAll(async () => {
  await replica?.close();
  await t.close();
});

describe('node and pod writes that fail part-way still reach every process', () => {
  it('a file with two nodes sharing one uid is refused before anything is written', async () => {
    const { access_token } = await login(replica, 'uma', 'Uma-pass-1');
    const before = await namesOn(replica, access_token);
    const uid = '0b9a3d5e-0000-4000-8000-00000000a001';
    await expect(t.app.cluster.nodes.importNodes(nodeFile(node('twin-a', { uid }), node('twin-b', { uid })))).rejects.toThrow(
      /nothing changed[\s\S]*items\[1\]\.metadata\.uid: uid 0b9a3d5e-0000-4000-8000-00000000a001 of node "twin-b" also belongs to node "twin-a" at items\[0\]/,
    );
    expect(await t.app.mongo.db.collection('cluster_nodes').countDocuments({ _id: { $in: ['twin-a', 'twin-b'] } as never })).toBe(0);
    expect(await namesOn(replica, access_token)).toEqual(before);
  });

  it('nodes written before an import failed are listed by the next request on another process', async () => {
    const { access_token } = await login(replica, 'uma', 'Uma-pass-1');
    expect(await namesOn(replica, access_token, '?names=half-written')).toEqual([]);
    const repo = createNodesRepo(t.app.mongo.db);
    const failingAfterWrite: typeof repo = {
      ...repo,
      async upsertMany(docs, onWritten) {
        await repo.upsertMany(docs, onWritten);
        throw new Error('connection lost after the first chunk');
      },
    };
    const writer = createNodesService({ nodes: failingAfterWrite, pods: createPodsRepo(t.app.mongo.db), clock: new MovableClock(), stamps: createClusterStamps(t.app.mongo.db), strategy: 'auto' });
    await expect(writer.importNodes(nodeFile(node('half-written')))).rejects.toThrow(/connection lost/);
    expect(await namesOn(replica, access_token, '?names=half-written')).toEqual(['half-written']);
  });

  it('pods written before an import failed change the annotations on another process', async () => {
    const { access_token } = await login(replica, 'uma', 'Uma-pass-1');
    const cpuRequests = async () => {
      const response = await replica.inject({ method: 'GET', url: `${NODES}/audit-base`, headers: bearer(access_token) });
      return response.json().metadata.annotations?.['node.kubesphere.io/cpu-requests'];
    };
    const before = await cpuRequests();
    const repo = createPodsRepo(t.app.mongo.db);
    const failingAfterWrite: typeof repo = {
      ...repo,
      async upsertMany(docs, onWritten) {
        await repo.upsertMany(docs, onWritten);
        throw new Error('connection lost after the usage was recomputed');
      },
    };
    const writer = createNodesService({ nodes: createNodesRepo(t.app.mongo.db), pods: failingAfterWrite, clock: new MovableClock(), stamps: createClusterStamps(t.app.mongo.db), strategy: 'auto' });
    await expect(writer.importPods(podFile('half-pod', 'audit-base', '300m'))).rejects.toThrow(/connection lost/);
    expect(before).not.toBe('300m');
    expect(await cpuRequests()).toBe('300m');
  });

  it('pods written before an import failed midway count in the annotations (the usage is recomputed all the same)', async () => {
    const { access_token } = await login(replica, 'uma', 'Uma-pass-1');
    const cpuRequests = async () => {
      const response = await replica.inject({ method: 'GET', url: `${NODES}/audit-base`, headers: bearer(access_token) });
      return response.json().metadata.annotations?.['node.kubesphere.io/cpu-requests'];
    };
    const before = await cpuRequests();
    const writer = createNodesService({ nodes: createNodesRepo(t.app.mongo.db), pods: createPodsRepo(t.app.mongo.db), clock: new MovableClock(), stamps: createClusterStamps(t.app.mongo.db), strategy: 'auto' });
    const file = podFile('midway-pod', 'audit-base', '700m');
    // The first chunk is written, then the import fails (the progress report stands for the next chunk's write).
    const failing = (progress: { step: string }) => {
      if (progress.step === 'written') throw new Error('connection lost after the first chunk');
    };
    await expect(writer.importPods(file, failing)).rejects.toThrow(/connection lost/);
    const afterFailure = await cpuRequests();
    expect(afterFailure).not.toBe(before);
    // What a complete import of the same file gives.
    await writer.importPods(file);
    expect(await cpuRequests()).toBe(afterFailure);
  });
});

describe('a writer stopped between its write and its stamp bump', () => {
  const stopsBeforeBump = () => Object.assign(Object.create(createClusterStamps(t.app.mongo.db)), { bump: async () => undefined });

  it('its nodes reach another process once the snapshot there is a minute old', async () => {
    const { access_token } = await login(replica, 'uma', 'Uma-pass-1');
    expect(await namesOn(replica, access_token, '?names=unbumped')).toEqual([]);
    const writer = createNodesService({ nodes: createNodesRepo(t.app.mongo.db), pods: createPodsRepo(t.app.mongo.db), clock: new MovableClock(), stamps: stopsBeforeBump(), strategy: 'auto' });
    await writer.importNodes(nodeFile(node('unbumped')));
    expect(await namesOn(replica, access_token, '?names=unbumped')).toEqual([]);
    replica.cluster.clock.advance(61_000);
    try {
      expect(await namesOn(replica, access_token, '?names=unbumped')).toEqual(['unbumped']);
    } finally {
      replica.cluster.clock.advance(-61_000);
    }
  });

  it('its revoked token is refused by another process within a minute', async () => {
    const { access_token } = await login(t.app, 'wren', 'Wren-pass-1');
    expect(await statusOn(replica, access_token)).toBe(200);
    await deleteEntriesBehindTheStamp('wren');
    replica.cluster.clock.advance(61_000);
    try {
      expect(await statusOn(replica, access_token)).toBe(401);
    } finally {
      replica.cluster.clock.advance(-61_000);
    }
  });
});

describe('revocations that find their work already done still wait for every process', () => {
  it('a logout whose entries a concurrent revocation already deleted answers only once other processes refuse the token', async () => {
    const { access_token } = await login(t.app, 'uma', 'Uma-pass-1');
    expect(await statusOn(replica, access_token)).toBe(200);
    expect(await statusOn(replica, access_token)).toBe(200);
    await deleteEntriesBehindTheStamp('uma');
    const logout = await t.app.inject({ method: 'GET', url: '/oauth/logout', headers: basic('uma', 'Uma-pass-1') });
    expect(logout.statusCode).toBe(200);
    expect(await statusOn(replica, access_token)).toBe(401);
  });

  it('a password reset (CLI) whose entries were already deleted still ends the cached sessions everywhere', async () => {
    const { access_token } = await login(t.app, 'vlad', 'Vlad-pass-1');
    expect(await statusOn(replica, access_token)).toBe(200);
    await deleteEntriesBehindTheStamp('vlad');
    await cli(t.app, ['user', 'reset-password', '--username', 'vlad', '--password', 'Vlad-pass-2']);
    expect(await statusOn(replica, access_token)).toBe(401);
  });

  it('a password reset stopped before its write has already ended the tokens everywhere', async () => {
    const { access_token } = await login(t.app, 'wren', 'Wren-pass-1');
    expect(await statusOn(replica, access_token)).toBe(200);
    const repo = createAccountsRepo(t.app.mongo.db);
    const stopped: typeof repo = Object.assign(Object.create(repo), {
      setPassword: async () => {
        throw new Error('process stopped before the password was written');
      },
    });
    const accounts = createAccountsService({
      accounts: stopped,
      clock: new MovableClock(),
      revokeTokens: t.app.cluster.tokens.revokeAll,
      accountStateChanged: async () => undefined,
      attempts: { clear: async () => undefined } as unknown as AttemptLimiter,
    });
    await expect(accounts.resetPassword('wren', 'Wren-pass-2')).rejects.toThrow(/process stopped/);
    expect(await statusOn(replica, access_token)).toBe(401);
    // The password did not change.
    await login(t.app, 'wren', 'Wren-pass-1');
  });

  it('disabling an account reaches every process even when a later step of the write fails', async () => {
    const { access_token } = await login(t.app, 'vlad', 'Vlad-pass-2');
    expect(await statusOn(replica, access_token)).toBe(200);
    const stamps = createClusterStamps(t.app.mongo.db);
    const failingClear = {
      clear: async () => {
        throw new Error('connection lost while clearing the attempt window');
      },
    } as unknown as AttemptLimiter;
    const accounts = createAccountsService({
      accounts: createAccountsRepo(t.app.mongo.db),
      clock: new MovableClock(),
      revokeTokens: t.app.cluster.tokens.revokeAll,
      accountStateChanged: () => stamps.bump(CLUSTER_STAMPS.accounts),
      attempts: failingClear,
    });
    try {
      await expect(accounts.setDisabled('vlad', true)).rejects.toThrow(/connection lost/);
      const refused = await replica.inject({ method: 'GET', url: NODES, headers: bearer(access_token) });
      expect(refused.statusCode).toBe(401);
    } finally {
      await cli(t.app, ['user', 'enable', 'vlad']);
    }
    // Enabled again instead of retried: the session the disable meant to end stays ended.
    expect(await statusOn(replica, access_token)).toBe(401);
    expect(await statusOn(t.app, access_token)).toBe(401);
  });
});

describe('cached identities and answers are never served to another caller', () => {
  const resolve = (app: FastifyInstance, token: string, allowRefreshToken = false) =>
    app.cluster.authenticator.authenticate({ headers: bearer(token), url: NODES } as unknown as FastifyRequest, { allowRefreshToken });

  it("one user's cached token never resolves to another user", async () => {
    const uma = await login(t.app, 'uma', 'Uma-pass-1');
    const wren = await login(t.app, 'wren', 'Wren-pass-1');
    for (let round = 0; round < 3; round++) {
      expect((await resolve(replica, uma.access_token))?.username).toBe('uma');
      expect((await resolve(replica, wren.access_token))?.username).toBe('wren');
    }
    // A token differing in one character is another key, and is refused.
    const altered = `${uma.access_token.slice(0, -2)}${uma.access_token.endsWith('AA') ? 'BB' : 'AA'}`;
    expect(await statusOn(replica, altered)).toBe(401);
  });

  it('a refresh token cached while accepted on /oauth is still refused on /kapis', async () => {
    const { refresh_token } = await login(t.app, 'uma', 'Uma-pass-1');
    expect((await resolve(replica, refresh_token, true))?.username).toBe('uma');
    const viaOAuth = await postToken(
      replica,
      { grant_type: 'refresh_token', refresh_token, client_id: 'kubesphere', client_secret: 'kubesphere' },
      bearer(refresh_token),
    );
    expect(viaOAuth.statusCode, viaOAuth.body).toBe(200);
    // Only a request routed to /oauth/* may use it: a /kapis path dressed as /oauth/ (sent as
    // is over a socket, not normalised) lists nothing.
    const address = await replica.listen({ port: 0, host: '127.0.0.1' });
    for (const path of [`/oauth/..${NODES}`, `/oauth/%2e%2e${NODES}`, `/oauth/%2E%2E/%2E%2E${NODES}`]) {
      const status = await new Promise<number | undefined>((resolve, reject) => {
        const { hostname, port } = new URL(address);
        const sent = request({ hostname, port, path, headers: bearer(refresh_token) }, (response) => {
          response.resume();
          resolve(response.statusCode);
        });
        sent.on('error', reject);
        sent.end();
      });
      expect([401, 404], path).toContain(status);
    }
    for (const url of [`${NODES}?limit=1`, `${ALIAS}?limit=1`, `${NODES}/audit-base`, `${NODES}/?limit=1`]) {
      const refused = await replica.inject({ method: 'GET', url, headers: bearer(refresh_token) });
      expect(refused.statusCode).toBe(401);
      expect(refused.json().message).toBe('Unauthorized: a refresh_token cannot be used as a bearer token, use the access_token');
    }
  });

  it('a cached token is refused once it expires, and a token issued in the future is not trusted from the cache', async () => {
    const { access_token } = await login(t.app, 'uma', 'Uma-pass-1');
    expect(await statusOn(replica, access_token)).toBe(200);
    replica.cluster.clock.advance(7200_000 - 2_000);
    try {
      // Inside the margin before expiry: verified afresh, still accepted.
      expect(await statusOn(replica, access_token)).toBe(200);
      replica.cluster.clock.advance(3_000);
      expect(await statusOn(replica, access_token)).toBe(401);
    } finally {
      replica.cluster.clock.advance(-7201_000);
    }
    // Back in time: the token is now "issued in the future" beyond the skew, so refused.
    replica.cluster.clock.advance(-60_000);
    try {
      expect(await statusOn(replica, access_token)).toBe(401);
    } finally {
      replica.cluster.clock.advance(60_000);
    }
    expect(await statusOn(replica, access_token)).toBe(200);
  });

  it('a memoised page (same query string, both groups) changes on another process right after a node write', async () => {
    const { access_token } = await login(t.app, 'uma', 'Uma-pass-1');
    const query = '?labelSelector=audit%3Dmemo&sortBy=name&limit=5';
    const page = async (base: string) => {
      const response = await replica.inject({ method: 'GET', url: `${base}${query}`, headers: bearer(access_token) });
      expect(response.statusCode, response.body).toBe(200);
      return response.json() as { items: { metadata: { name: string } }[]; totalItems: number };
    };
    for (const base of [NODES, ALIAS, NODES]) expect((await page(base)).totalItems).toBe(0);
    await t.app.cluster.nodes.importNodes(nodeFile(node('memo-a', { labels: { audit: 'memo' } })));
    // A HEAD request first: its empty body must not become the memoised answer of the GET.
    const head = await replica.inject({ method: 'HEAD', url: `${ALIAS}${query}`, headers: bearer(access_token) });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe('');
    for (const base of [ALIAS, NODES]) expect((await page(base)).items.map((item) => item.metadata.name)).toEqual(['memo-a']);
    const single = await replica.inject({ method: 'GET', url: `${ALIAS}/memo-a`, headers: bearer(access_token) });
    expect(single.statusCode).toBe(200);
  });
});
