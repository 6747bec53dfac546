import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, login } from '../fixtures/cluster/helpers.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * Importing again what is already stored replaces it: node documents, and the per-node usage
 * summaries rewritten after a pod import. Sixty of each, so the replacements go over the 50
 * update statements that stall FerretDB 1.24 in one command (infra/mongo.ts, bulkUpdate).
 */
let t: TestApp;
const NODES = '/kapis/resources.platform.io/v1alpha3/nodes';
const COUNT = 60;
const names = Array.from({ length: COUNT }, (_, i) => `again-${String(i).padStart(2, '0')}`);

const nodeFile = (tier: string) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: names.map((name) => ({
      metadata: { name, creationTimestamp: '2024-03-01T00:00:00Z', labels: { tier } },
      status: { allocatable: { cpu: '2', memory: '4Gi' }, conditions: [{ type: 'Ready', status: 'True' }] },
    })),
  });
const podFile = (cpu: string) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: names.map((nodeName) => ({ metadata: { name: `pod-on-${nodeName}`, namespace: 'again' }, spec: { nodeName, containers: [{ name: 'c', resources: { requests: { cpu } } }] }, status: { phase: 'Running' } })),
  });

beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

describe('importing again', () => {
  it('replaces sixty stored nodes and their usage summaries', async () => {
    expect(await t.app.cluster.nodes.importNodes(nodeFile('one'))).toMatchObject({ created: COUNT, updated: 0 });
    expect(await t.app.cluster.nodes.importPods(podFile('100m'))).toMatchObject({ created: COUNT, updated: 0 });
    expect(await t.app.cluster.nodes.importNodes(nodeFile('two'))).toMatchObject({ created: 0, updated: COUNT });
    expect(await t.app.cluster.nodes.importPods(podFile('250m'))).toMatchObject({ created: 0, updated: COUNT });

    const headers = bearer((await login(t.app)).access_token);
    const response = await t.app.inject({ method: 'GET', url: `${NODES}?labelSelector=tier%3Dtwo&limit=100`, headers });
    expect(response.statusCode, response.body).toBe(200);
    const items = (response.json() as { items: { metadata: { name: string; annotations: Record<string, string> } }[] }).items;
    expect(items.map((item) => item.metadata.name).sort()).toEqual(names);
    for (const item of items) expect(item.metadata.annotations['node.kubesphere.io/cpu-requests']).toBe('250m');
  });
});
