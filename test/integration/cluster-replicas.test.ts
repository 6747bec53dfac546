import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { bearer, cli, fixture, login } from '../fixtures/cluster/helpers.js';
import { buildTestApp, type TestApp, testConfig } from '../helpers/app.js';
import { commandsDuring } from '../helpers/command-counter.js';

/**
 * Two processes of the service on one database (two app instances, each with its own caches):
 * writes through one are seen by the very next request on the other, and a warm node list
 * costs no node, token or account read.
 */
let t: TestApp;
let replica: FastifyInstance;
const NODES = '/kapis/resources.platform.io/v1alpha3/nodes';

const node = (name: string, labels: Record<string, string> = {}) => ({
  metadata: { name, creationTimestamp: '2024-02-01T00:00:00Z', labels },
  status: { allocatable: { cpu: '4', memory: '8Gi' }, conditions: [{ type: 'Ready', status: 'True' }] },
});
const nodeFile = (...items: ReturnType<typeof node>[]) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
const podFile = (name: string, nodeName: string, cpu: string) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: [{ metadata: { name, namespace: 'default' }, spec: { nodeName, containers: [{ name: 'c', resources: { requests: { cpu } } }] }, status: { phase: 'Running' } }],
  });

async function listOn(app: FastifyInstance, headers: Record<string, string>, query = '') {
  const response = await app.inject({ method: 'GET', url: `${NODES}${query}`, headers });
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as { items: { metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> } }[]; totalItems: number };
}

beforeAll(async () => {
  t = await buildTestApp();
  replica = await buildApp(testConfig({ MONGODB_URI: t.config.MONGODB_URI }), { startupTasks: false });
  await replica.ready();
  await cli(t.app, ['user', 'add', '--username', 'olga', '--email', 'olga@example.com', '--password', 'Olga-pass1']);
  await cli(t.app, ['nodes', 'import', fixture('nodes.json')]);
});

afterAll(async () => {
  await replica?.close();
  await t.close();
});

describe('cost of a node list request', () => {
  it('a warm page with a bearer token reads no node, token or account: at most the two stamps', async () => {
    const headers = bearer((await login(t.app)).access_token);
    await listOn(replica, headers, '?limit=2&page=2&sortBy=name');
    await listOn(replica, headers, '?limit=2&page=1');
    const commands = await commandsDuring(replica, () => listOn(replica, headers, '?limit=2&page=2&sortBy=name'));
    expect(commands.every((command) => command.name === 'find' && command.collection === 'version_stamps'), JSON.stringify(commands)).toBe(true);
    expect(commands.length).toBeLessThanOrEqual(2);
    // Another query over the same index still reads nothing but the stamps.
    const other = await commandsDuring(replica, () => listOn(replica, headers, '?labelSelector=node-role.kubernetes.io/master&ascending=true'));
    expect(other.every((command) => command.collection === 'version_stamps'), JSON.stringify(other)).toBe(true);
  });

  it('the single node GET is served from the same index', async () => {
    const headers = bearer((await login(t.app)).access_token);
    expect((await replica.inject({ method: 'GET', url: `${NODES}/master1`, headers })).statusCode).toBe(200);
    const commands = await commandsDuring(replica, async () => {
      const response = await replica.inject({ method: 'GET', url: `${NODES}/worker1`, headers });
      expect(response.json().metadata.name).toBe('worker1');
    });
    expect(commands.every((command) => command.collection === 'version_stamps'), JSON.stringify(commands)).toBe(true);
  });
});

describe('node and pod writes through one process, lists through another', () => {
  it('a node imported by the CLI is listed by the next request on both processes', async () => {
    const headers = bearer((await login(t.app)).access_token);
    const before = await listOn(replica, headers);
    expect(before.items.map((item) => item.metadata.name)).not.toContain('replica-a');
    await cli(t.app, ['nodes', 'import', fixture('nodes.json')]);
    await t.app.cluster.nodes.importNodes(nodeFile(node('replica-a', { tier: 'one' })));
    for (const app of [replica, t.app]) {
      const after = await listOn(app, headers, '?names=replica-a');
      expect(after.items.map((item) => item.metadata.labels)).toEqual([{ tier: 'one' }]);
    }
    expect((await listOn(replica, headers)).totalItems).toBe(before.totalItems + 1);
  });

  it('an updated node and its filtered, sorted views change on the other process at once', async () => {
    const headers = bearer((await login(t.app)).access_token);
    expect((await listOn(replica, headers, '?label=tier=one&sortBy=name')).totalItems).toBe(1);
    expect((await listOn(replica, headers, '?label=tier=two&sortBy=name')).totalItems).toBe(0);
    await t.app.cluster.nodes.importNodes(nodeFile(node('replica-a', { tier: 'two' })));
    expect((await listOn(replica, headers, '?label=tier=one&sortBy=name')).totalItems).toBe(0);
    expect((await listOn(replica, headers, '?label=tier=two&sortBy=name')).items.map((item) => item.metadata.name)).toEqual(['replica-a']);
  });

  it('pods imported through one process change the usage annotations listed by the other', async () => {
    const headers = bearer((await login(t.app)).access_token);
    await cli(t.app, ['pods', 'import', fixture('pods.json')]);
    const annotation = async () => (await listOn(replica, headers, '?names=replica-a')).items[0]?.metadata.annotations?.['node.kubesphere.io/cpu-requests'];
    expect(await annotation()).toBe('0');
    await t.app.cluster.nodes.importPods(podFile('on-replica-a', 'replica-a', '750m'));
    expect(await annotation()).toBe('750m');
    const single = await replica.inject({ method: 'GET', url: `${NODES}/replica-a`, headers });
    expect(single.json().metadata.annotations['node.kubesphere.io/cpu-requests']).toBe('750m');
  });
});

describe('revocation through one process is exact on another', () => {
  async function acceptedOnReplica(token: string) {
    return (await replica.inject({ method: 'GET', url: `${NODES}?limit=1`, headers: bearer(token) })).statusCode;
  }

  it('a logout on one process ends the session on the other at its next request', async () => {
    const { access_token } = await login(t.app, 'olga', 'Olga-pass1');
    expect(await acceptedOnReplica(access_token)).toBe(200);
    expect(await acceptedOnReplica(access_token)).toBe(200);
    const logout = await t.app.inject({ method: 'GET', url: '/oauth/logout', headers: bearer(access_token) });
    expect(logout.statusCode).toBe(200);
    expect(await acceptedOnReplica(access_token)).toBe(401);
  });

  it('disabling the account (CLI) refuses its cached token on the other process; enabling lets it log in again, not revive the old token', async () => {
    const { access_token } = await login(t.app, 'olga', 'Olga-pass1');
    expect(await acceptedOnReplica(access_token)).toBe(200);
    try {
      await cli(t.app, ['user', 'disable', 'olga']);
      const refused = await replica.inject({ method: 'GET', url: NODES, headers: bearer(access_token) });
      expect(refused.statusCode).toBe(401);
      expect(refused.json().message).toMatch(/^Unauthorized: (account is not active|token not found in cache)$/);
    } finally {
      await cli(t.app, ['user', 'enable', 'olga']);
    }
    expect((await replica.inject({ method: 'GET', url: NODES, headers: bearer(access_token) })).statusCode).toBe(401);
    expect(await acceptedOnReplica((await login(replica, 'olga', 'Olga-pass1')).access_token)).toBe(200);
  });

  it('a password reset on one process ends the sessions on the other', async () => {
    const { access_token } = await login(t.app, 'olga', 'Olga-pass1');
    expect(await acceptedOnReplica(access_token)).toBe(200);
    await cli(t.app, ['user', 'reset-password', '--username', 'olga', '--password', 'Olga-pass2']);
    const refused = await replica.inject({ method: 'GET', url: NODES, headers: bearer(access_token) });
    expect(refused.statusCode).toBe(401);
    expect(refused.json().message).toBe('Unauthorized: token not found in cache');
    expect(await acceptedOnReplica((await login(replica, 'olga', 'Olga-pass2')).access_token)).toBe(200);
  });

  it('a cached credential still expires with its token', async () => {
    const { access_token } = await login(t.app, 'olga', 'Olga-pass2');
    expect(await acceptedOnReplica(access_token)).toBe(200);
    replica.cluster.clock.advance(7201_000);
    try {
      const refused = await replica.inject({ method: 'GET', url: NODES, headers: bearer(access_token) });
      expect(refused.statusCode).toBe(401);
      expect(refused.json().message).toMatch(/^Unauthorized: jwt: token is expired by/);
    } finally {
      replica.cluster.clock.advance(-7201_000);
    }
  });
});
