import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, cli, fixture, login } from '../fixtures/cluster/helpers.js';

let t: TestApp;
let auth: Record<string, string>;
const BASE = '/kapis/resources.platform.io/v1alpha3/nodes';

async function list(query = '', base = BASE) {
  const response = await t.app.inject({ method: 'GET', url: `${base}${query ? `?${query}` : ''}`, headers: auth });
  expect(response.statusCode, response.body).toBe(200);
  const body = response.json() as { items: { metadata: { name: string; uid?: string; annotations?: Record<string, string> } }[]; totalItems: number };
  return { names: body.items.map((item) => item.metadata.name), totalItems: body.totalItems, body };
}

// Both list strategies run the same table: filters in the database, or over the cached index.
for (const strategy of ['database', 'cache'] as const) {
  describe(`node list with CLUSTER_NODE_QUERY=${strategy}`, () => {
    beforeAll(async () => {
      t = await buildTestApp({ CLUSTER_NODE_QUERY: strategy });
      auth = bearer((await login(t.app)).access_token);
      await cli(t.app, ['nodes', 'import', fixture('nodes.json')]);
    });

    afterAll(async () => {
      await t.close();
    });

    describe('node list shape', () => {
      it('returns {items, totalItems} with Kubernetes Node objects, newest first by default', async () => {
        const { names, totalItems, body } = await list();
        expect(totalItems).toBe(5);
        // Same creation second for worker2 and edge1: the larger name comes first when descending.
        expect(names).toEqual(['worker3', 'worker2', 'edge1', 'worker1', 'master1']);
        expect(Object.keys(body)).toEqual(['items', 'totalItems']);
        const master = body.items.find((item) => item.metadata.name === 'master1') as unknown as Record<string, Record<string, unknown>> & { metadata: Record<string, unknown> };
        expect(master.kind).toBeUndefined();
        expect(master.metadata).toMatchObject({
          name: 'master1',
          selfLink: '/api/v1/nodes/master1',
          uid: '6f1c0c2e-0000-4000-8000-000000000001',
          resourceVersion: '1234',
          creationTimestamp: '2024-01-01T00:00:00Z',
          labels: { 'kubernetes.io/hostname': 'master1', 'node-role.kubernetes.io/master': '' },
          annotations: { 'kubesphere.io/alias-name': 'primary-control', 'node.alpha.kubernetes.io/ttl': '0' },
        });
        // Dotted keys deep inside the object survive storage untouched.
        expect((master.metadata.managedFields as { fieldsV1: unknown }[])[0]?.fieldsV1).toEqual({ 'f:metadata': { 'f:labels': { '.': {}, 'f:kubernetes.io/hostname': {} } } });
        expect(master.status).toMatchObject({ daemonEndpoints: { kubeletEndpoint: { Port: 10250 } }, allocatable: { cpu: '4', memory: '8Gi' } });
        expect(master.spec).toEqual({ podCIDR: '10.233.64.0/24', podCIDRs: ['10.233.64.0/24'] });
      });

      it('gives a generated, stable uid to nodes imported without one', async () => {
        const { body } = await list('names=worker2');
        const uid = body.items[0]?.metadata.uid;
        expect(uid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/);
        await cli(t.app, ['nodes', 'import', fixture('nodes.json')]);
        expect((await list('names=worker2')).body.items[0]?.metadata.uid).toBe(uid);
      });

      it('serves the same routes under the resources.kubesphere.io alias group', async () => {
        const alias = await list('sortBy=name&ascending=true', '/kapis/resources.kubesphere.io/v1alpha3/nodes');
        expect(alias.names).toEqual(['edge1', 'master1', 'worker1', 'worker2', 'worker3']);
        const one = await t.app.inject({ method: 'GET', url: '/kapis/resources.kubesphere.io/v1alpha3/nodes/edge1', headers: auth });
        expect(one.statusCode).toBe(200);
        expect(one.json().metadata.name).toBe('edge1');
      });
    });

    describe('paging', () => {
      it.each([
        ['limit=2&page=1', ['worker3', 'worker2']],
        ['limit=2&page=2', ['edge1', 'worker1']],
        ['limit=2&page=3', ['master1']],
        ['limit=2&page=4', []],
        ['limit=2&page=99', []],
        ['limit=0', []],
        ['limit=0&page=1', []],
        ['limit=-1', ['worker3', 'worker2', 'edge1', 'worker1', 'master1']],
        ['limit=-5', []],
        ['limit=2&page=0', []],
        ['limit=2&page=-1', []],
        ['limit=abc', ['worker3', 'worker2', 'edge1', 'worker1', 'master1']],
        ['limit=2&page=abc', ['worker3', 'worker2']],
        ['limit=10', ['worker3', 'worker2', 'edge1', 'worker1', 'master1']],
        ['page=2', ['worker3', 'worker2', 'edge1', 'worker1', 'master1']],
      ])('%s', async (query, expected) => {
        const { names, totalItems } = await list(query);
        expect(names).toEqual(expected);
        expect(totalItems).toBe(5);
      });
    });

    describe('sorting', () => {
      it.each([
        ['sortBy=name', ['worker3', 'worker2', 'worker1', 'master1', 'edge1']],
        ['sortBy=name&ascending=true', ['edge1', 'master1', 'worker1', 'worker2', 'worker3']],
        ['sortBy=name&ascending=1', ['edge1', 'master1', 'worker1', 'worker2', 'worker3']],
        ['sortBy=createTime&ascending=true', ['master1', 'worker1', 'edge1', 'worker2', 'worker3']],
        ['sortBy=creationTimestamp&ascending=false', ['worker3', 'worker2', 'edge1', 'worker1', 'master1']],
        ['sortBy=garbage&ascending=maybe', ['worker3', 'worker2', 'edge1', 'worker1', 'master1']],
      ])('%s', async (query, expected) => {
        expect((await list(query)).names).toEqual(expected);
      });
    });

    describe('filters', () => {
      it('a name or alias longer than any (40,000 characters) matches nothing; as a pattern it was a 500', async () => {
        expect((await list(`name=${'w'.repeat(40_000)}`)).names).toEqual([]);
        expect((await list(`alias=${'x'.repeat(40_000)}`)).names).toEqual([]);
      });

      it.each([
        ['name=worker', ['worker3', 'worker2', 'worker1']],
        ['name=WORKER', []],
        ['name=ster', ['master1']],
        ['name=', ['worker3', 'worker2', 'edge1', 'worker1', 'master1']],
        ['name=.*', []],
        ['names=master1,edge1', ['edge1', 'master1']],
        ['names=master', []],
        ['uid=6f1c0c2e-0000-4000-8000-000000000004', ['edge1']],
        ['status=running', ['worker1', 'master1']],
        ['status=warning', ['worker3', 'edge1']],
        ['status=unschedulable', ['worker2']],
        ['status=bogus', []],
        ['label=env=prod', ['edge1', 'worker1']],
        ['label=env!=prod', ['worker3', 'worker2', 'master1']],
        ['label=env', ['worker2', 'edge1', 'worker1']],
        ['label=!env', ['worker3', 'master1']],
        ['label=env in (prod,staging),tier', ['worker2', 'worker1']],
        ['label=env notin (prod)', ['worker3', 'worker2', 'master1']],
        ['label=tier>2', ['worker2', 'worker1']],
        ['label=tier<2', ['master1']],
        ['label=a b c', []],
        ['annotation=note=beta', ['worker1']],
        ['annotation=note', ['worker2', 'worker1', 'master1']],
        ['annotation=!note', ['worker3', 'edge1']],
        ['annotation=node.alpha.kubernetes.io/ttl=0', ['master1']],
        ['alias=worker', ['worker1']],
        ['alias=control', ['master1']],
        ['namespace=default', []],
        ['ownerKind=ReplicaSet', []],
        ['foo=bar', ['worker3', 'worker2', 'edge1', 'worker1', 'master1']],
        ['_=1700000000', ['worker3', 'worker2', 'edge1', 'worker1', 'master1']],
        ['status=running&label=env=prod', ['worker1']],
        ['name=worker&name=edge', ['edge1']],
      ])('%s', async (query, expected) => {
        const { names, totalItems } = await list(query);
        expect(names).toEqual(expected);
        expect(totalItems).toBe(expected.length);
      });

      it('pages after filtering in code (> and < requirements)', async () => {
        const { names, totalItems } = await list('label=tier>0&sortBy=name&ascending=true&limit=2&page=2');
        expect(totalItems).toBe(3);
        expect(names).toEqual(['worker2']);
      });
    });

    describe('labelSelector', () => {
      it.each([
        ['node-role.kubernetes.io/master', ['master1']],
        ['!node-role.kubernetes.io/edge', ['worker3', 'worker2', 'worker1', 'master1']],
        ['node-role.kubernetes.io/edge=', ['edge1']],
        ['env=prod', ['edge1', 'worker1']],
        ['env==prod', ['edge1', 'worker1']],
        ['env!=prod', ['worker3', 'worker2', 'master1']],
        ['env in (prod, staging)', ['worker2', 'edge1', 'worker1']],
        ['env notin (prod,staging)', ['worker3', 'master1']],
        ['env=prod,node-role.kubernetes.io/worker', ['worker1']],
        ['env=prod,!node-role.kubernetes.io/edge', ['worker1']],
        ['tier>4', ['worker2']],
        ['kubernetes.io/hostname in (master1,worker3)', ['worker3', 'master1']],
        // An invalid selector is ignored and matches everything.
        ['env in (prod', ['worker3', 'worker2', 'edge1', 'worker1', 'master1']],
        ['=prod', ['worker3', 'worker2', 'edge1', 'worker1', 'master1']],
      ])('%s', async (selector, expected) => {
        const { names, totalItems } = await list(`labelSelector=${encodeURIComponent(selector)}`);
        expect(names).toEqual(expected);
        expect(totalItems).toBe(expected.length);
      });

      it('combines with filters, sorting and paging as the console does', async () => {
        const { names, totalItems } = await list(`sortBy=createTime&limit=2&page=1&labelSelector=${encodeURIComponent('!node-role.kubernetes.io/edge')}&name=worker`);
        expect(totalItems).toBe(3);
        expect(names).toEqual(['worker3', 'worker2']);
      });
    });

    describe('single node', () => {
      it('returns the node object without a wrapper', async () => {
        const response = await t.app.inject({ method: 'GET', url: `${BASE}/worker2`, headers: auth });
        expect(response.statusCode).toBe(200);
        expect(response.json()).toMatchObject({ metadata: { name: 'worker2', selfLink: '/api/v1/nodes/worker2' }, spec: { unschedulable: true } });
      });

      it('answers a missing node with a 404 Status', async () => {
        const response = await t.app.inject({ method: 'GET', url: `${BASE}/nope`, headers: auth });
        expect(response.statusCode).toBe(404);
        expect(response.json()).toMatchObject({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          reason: 'NotFound',
          code: 404,
          message: 'node "nope" not found',
          details: { name: 'nope', kind: 'nodes', group: 'resources.platform.io' },
        });
      });
    });

    describe('computed node.kubesphere.io annotations', () => {
      const usageKeys = (annotations: Record<string, string> = {}) => Object.keys(annotations).filter((key) => key.startsWith('node.kubesphere.io/'));

      it('adds none while no pod is stored at all (reference quirk)', async () => {
        const { body } = await list();
        for (const item of body.items) expect(usageKeys(item.metadata.annotations)).toEqual([]);
      });

      it('adds none to the list while every stored pod has finished; the single GET counts them (as the reference)', async () => {
        const dir = await mkdtemp(join(tmpdir(), 'finished-pods-'));
        const file = join(dir, 'finished.json');
        const finished = { metadata: { name: 'done-x', namespace: 'batch', uid: 'u-done-x' }, spec: { nodeName: 'edge1', containers: [{ name: 'c', resources: { requests: { cpu: '100m' } } }] }, status: { phase: 'Succeeded' } };
        await writeFile(file, JSON.stringify({ kind: 'PodList', items: [finished] }));
        expect(await cli(t.app, ['pods', 'import', file])).toMatchObject({ created: 1 });
        const { body } = await list();
        for (const item of body.items) expect(usageKeys(item.metadata.annotations)).toEqual([]);
        const single = await t.app.inject({ method: 'GET', url: `${BASE}/edge1`, headers: auth });
        expect(single.json().metadata.annotations).toMatchObject({ 'node.kubesphere.io/cpu-requests': '100m' });
      });

      it('sums requests and limits of running pods per node (kubectl rules, overhead, init containers)', async () => {
        expect(await cli(t.app, ['pods', 'import', fixture('pods.json')])).toMatchObject({ kind: 'PodList', created: 4, count: 4 });
        const { body } = await list('names=worker1,master1,edge1');
        const byName = Object.fromEntries(body.items.map((item) => [item.metadata.name, item.metadata.annotations ?? {}]));
        // worker1: web-a (750m / 640Mi, limits 1 / 1Gi) + agent-b (max(100m, init 2) + 100m overhead = 2100m, 64Mi); job-c Succeeded is left out.
        expect(byName.worker1).toMatchObject({
          'node.kubesphere.io/cpu-requests': '2850m',
          'node.kubesphere.io/cpu-limits': '1',
          'node.kubesphere.io/memory-requests': '704Mi',
          'node.kubesphere.io/memory-limits': '1Gi',
          'node.kubesphere.io/cpu-requests-fraction': '142%',
          'node.kubesphere.io/cpu-limits-fraction': '50%',
          'node.kubesphere.io/memory-requests-fraction': '17%',
          'node.kubesphere.io/memory-limits-fraction': '25%',
          note: 'beta',
        });
        expect(byName.master1).toMatchObject({
          'node.kubesphere.io/cpu-requests': '0',
          'node.kubesphere.io/memory-limits': '0',
          'node.kubesphere.io/cpu-requests-fraction': '0%',
          'kubesphere.io/alias-name': 'primary-control',
        });
        // A node stored without annotations gets a map holding only the computed ones.
        expect(usageKeys(byName.edge1)).toHaveLength(8);
      });

      it('counts terminated pods too on the single-node GET (reference quirk)', async () => {
        const response = await t.app.inject({ method: 'GET', url: `${BASE}/worker1`, headers: auth });
        expect(response.json().metadata.annotations).toMatchObject({
          'node.kubesphere.io/cpu-requests': '3850m',
          'node.kubesphere.io/cpu-requests-fraction': '192%',
          'node.kubesphere.io/memory-requests': '1728Mi',
        });
      });

      it('never stores the computed annotations', async () => {
        const stored = await t.app.mongo.db.collection('cluster_nodes').findOne({ _id: 'worker1' as never });
        expect(stored?.json).not.toContain('node.kubesphere.io/cpu-requests');
      });
    });
  });
}

describe('cached node index follows writes made by another process', () => {
  let other: TestApp;
  beforeAll(async () => {
    other = await buildTestApp({ CLUSTER_NODE_QUERY: 'cache' });
    auth = bearer((await login(other.app)).access_token);
  });
  afterAll(async () => {
    await other.close();
  });

  it('sees nodes imported through the CLI after it was loaded', async () => {
    const before = await other.app.inject({ method: 'GET', url: BASE, headers: auth });
    expect(before.json().totalItems).toBe(0);
    await cli(other.app, ['nodes', 'import', fixture('nodes.json')]);
    const after = await other.app.inject({ method: 'GET', url: `${BASE}?status=warning`, headers: auth });
    expect(after.json().totalItems).toBe(2);
  });
});
