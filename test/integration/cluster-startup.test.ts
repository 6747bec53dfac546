import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, login } from '../fixtures/cluster/helpers.js';

let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp({ CLUSTER_REGISTER_HOST_NODE: 'true', CLUSTER_ADMIN_PASSWORD: 'Start-admin-1' });
});

afterAll(async () => {
  await t.close();
});

describe('first start', () => {
  it('creates the default admin, uninitialized, with CLUSTER_ADMIN_PASSWORD', async () => {
    const admin = await t.app.mongo.db.collection('cluster_users').findOne({ _id: 'admin' as never });
    expect(admin).toMatchObject({ email: 'admin@kubesphere.io', state: 'Active', uninitialized: true });
    expect(admin?.passwordHash).toMatch(/^scrypt\$/);
    const pair = await login(t.app, 'admin', 'Start-admin-1');
    expect(JSON.parse(Buffer.from(pair.access_token.split('.')[1] as string, 'base64url').toString()).extra).toEqual({ uninitialized: ['true'] });
  });

  it('registers this host as a Ready node with real facts', async () => {
    const { access_token } = await login(t.app, 'admin', 'Start-admin-1');
    const response = await t.app.inject({ method: 'GET', url: '/kapis/resources.platform.io/v1alpha3/nodes', headers: bearer(access_token) });
    const { items, totalItems } = response.json();
    expect(totalItems).toBe(1);
    const node = items[0];
    expect(node.metadata.labels['kubernetes.io/hostname']).toBe(node.metadata.name);
    expect(node.metadata.name).toBe(os.hostname().toLowerCase().replace(/[^a-z0-9.-]/g, '-').replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '') || 'localhost');
    expect(node.status.capacity.cpu).toBe(String(os.availableParallelism()));
    expect(node.status.capacity.memory).toBe(`${Math.floor(os.totalmem() / 1024)}Ki`);
    expect(node.status.nodeInfo).toMatchObject({ kernelVersion: os.release(), operatingSystem: 'linux' });
    expect(node.status.nodeInfo.osImage).toBeTruthy();
    expect(node.status.conditions.find((condition: { type: string }) => condition.type === 'Ready').status).toBe('True');
    expect(node.status.addresses.some((address: { type: string }) => address.type === 'InternalIP')).toBe(true);
    const running = await t.app.inject({ method: 'GET', url: '/kapis/resources.platform.io/v1alpha3/nodes?status=running', headers: bearer(access_token) });
    expect(running.json().totalItems).toBe(1);
  });

  it('a second start on the same database keeps the admin and the node as they are', async () => {
    await t.app.mongo.db.collection('cluster_users').updateOne({ _id: 'admin' as never }, { $set: { uninitialized: false } });
    const second = await buildTestApp({ MONGODB_URI: t.config.MONGODB_URI, CLUSTER_REGISTER_HOST_NODE: 'true', CLUSTER_ADMIN_PASSWORD: 'Other-admin-2' });
    try {
      expect(await second.app.mongo.db.collection('cluster_nodes').countDocuments()).toBe(1);
      const admin = await second.app.mongo.db.collection('cluster_users').findOne({ _id: 'admin' as never });
      expect(admin?.uninitialized).toBe(false);
      expect((await login(second.app, 'admin', 'Start-admin-1')).token_type).toBe('Bearer');
    } finally {
      await second.app.close();
    }
  });

  it('skips host registration when CLUSTER_REGISTER_HOST_NODE=false', async () => {
    const other = await buildTestApp();
    try {
      expect(await other.app.mongo.db.collection('cluster_nodes').countDocuments()).toBe(0);
      expect(await other.app.mongo.db.collection('cluster_users').countDocuments({ _id: 'admin' as never })).toBe(1);
    } finally {
      await other.close();
    }
  });
});
