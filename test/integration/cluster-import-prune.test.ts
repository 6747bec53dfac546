import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, cli, login } from '../fixtures/cluster/helpers.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * Imports through the CLI as an operator re-runs them against a changing cluster: quantities
 * out of range refused before anything is written, `--prune` removing what kubectl no longer
 * lists (seen by the app's in-process node index at its next request), `nodes delete`.
 */
let t: TestApp;
let auth: Record<string, string>;
let dir: string;
const NODES = '/kapis/resources.platform.io/v1alpha3/nodes';
const pods = () => t.app.mongo.db.collection('cluster_pods');

async function file(name: string, items: unknown[]): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  return path;
}
const node = (name: string) => ({
  metadata: { name, creationTimestamp: '2024-02-01T00:00:00Z' },
  status: { allocatable: { cpu: '4', memory: '8Gi' }, conditions: [{ type: 'Ready', status: 'True' }] },
});
const pod = (name: string, nodeName: string, requests: Record<string, string>) => ({
  metadata: { name, namespace: 'default' },
  spec: { nodeName, containers: [{ name: 'c', resources: { requests } }] },
  status: { phase: 'Running' },
});

async function listed(): Promise<{ name: string; annotations: Record<string, string> }[]> {
  const response = await t.app.inject({ method: 'GET', url: NODES, headers: auth });
  expect(response.statusCode, response.body).toBe(200);
  return (response.json() as { items: { metadata: { name: string; annotations?: Record<string, string> } }[] }).items.map((item) => ({
    name: item.metadata.name,
    annotations: item.metadata.annotations ?? {},
  }));
}
const annotation = async (name: string, key: string) => (await listed()).find((item) => item.name === name)?.annotations[`node.kubesphere.io/${key}`];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cluster-import-'));
  t = await buildTestApp();
  auth = bearer((await login(t.app)).access_token);
});
afterAll(async () => {
  await t.close();
  await rm(dir, { recursive: true, force: true });
});

describe('quantities out of range', () => {
  it('a file is refused whole at validation, naming the item, even after a full write chunk of good pods', async () => {
    await cli(t.app, ['nodes', 'import', await file('nodes.json', [node('n1'), node('n2')])]);
    // 1,000 pods are one write chunk: the refusal must come before the first is written.
    const items = Array.from({ length: 1000 }, (_, index) => pod(`ok-${index}`, 'n2', { cpu: '1m' }));
    items.push(pod('huge', 'n2', { memory: '1e400' }));
    const error = await cli(t.app, ['pods', 'import', await file('pods-huge.json', items)]).catch((caught: Error) => caught);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/nothing changed/);
    expect((error as Error).message).toContain('items[1000].spec.containers.0.resources.requests.memory: out of range');
    expect(await pods().countDocuments({})).toBe(0);
  });

  it('pods stored before the check (1e308 bytes each, summing past float range) do not fail the next import or a page', async () => {
    const legacy = { namespace: 'old', uid: '', nodeName: 'n1', phase: 'Running', cpuRequests: 0, cpuLimits: 0, memoryLimits: 0, updatedAt: new Date() };
    await pods().insertMany([
      { _id: 'old/a', name: 'a', memoryRequests: 1e308, ...legacy },
      { _id: 'old/b', name: 'b', memoryRequests: 1e308, ...legacy },
    ] as never[]);
    await cli(t.app, ['pods', 'import', await file('pods-small.json', [pod('small', 'n1', { cpu: '250m' })])]);
    expect(await annotation('n1', 'cpu-requests')).toBe('250m');
    // Saturated at the largest double: a number, not Infinity or a 500.
    expect(await annotation('n1', 'memory-requests')).toMatch(/^\d+Ei$/);
  });
});

describe('--prune', () => {
  it('pods: the pods the file does not list are deleted and stop counting on their node', async () => {
    await cli(t.app, ['pods', 'import', '--prune', await file('pods1.json', [pod('a', 'n1', { cpu: '1' }), pod('b', 'n1', { cpu: '1' })])]);
    expect(await annotation('n1', 'cpu-requests')).toBe('2');
    expect(await annotation('n1', 'memory-requests')).toBe('0');
    // Pod b was deleted in the cluster: the next kubectl output no longer has it.
    const pruned = await cli(t.app, ['pods', 'import', await file('pods2.json', [pod('a', 'n1', { cpu: '1' })]), '--prune']);
    expect(pruned).toMatchObject({ kind: 'PodList', created: 0, updated: 1, deleted: 1, count: 1 });
    expect(await annotation('n1', 'cpu-requests')).toBe('1');
    expect(await pods().distinct('_id')).toEqual(['default/a']);
  });

  it('pods: without --prune a re-import only upserts, as before', async () => {
    const result = await cli(t.app, ['pods', 'import', await file('pods3.json', [pod('c', 'n1', { cpu: '1' })])]);
    expect(result).not.toHaveProperty('deleted');
    expect(await annotation('n1', 'cpu-requests')).toBe('2');
    // An empty list with --prune: the cluster has no pods left (and the list no annotations).
    expect(await cli(t.app, ['pods', 'import', '--prune', await file('pods-none.json', [])])).toMatchObject({ deleted: 2, count: 0 });
    expect(await pods().countDocuments({})).toBe(0);
    expect(await annotation('n1', 'cpu-requests')).toBeUndefined();
  });

  it('nodes: a node no longer in `kubectl get nodes -o json` is no longer listed, on the warm index too', async () => {
    await cli(t.app, ['nodes', 'import', await file('nodes3.json', [node('n1'), node('n2'), node('n3')])]);
    expect((await listed()).map((item) => item.name)).toEqual(['n3', 'n2', 'n1']);
    expect(await cli(t.app, ['nodes', 'import', await file('nodes1.json', [node('n1'), node('n3')])])).not.toHaveProperty('deleted');
    expect((await listed()).map((item) => item.name)).toEqual(['n3', 'n2', 'n1']);
    expect(await cli(t.app, ['nodes', 'import', '--prune', await file('nodes1.json', [node('n1'), node('n3')])])).toMatchObject({ updated: 2, deleted: 1 });
    expect((await listed()).map((item) => item.name)).toEqual(['n3', 'n1']);
    const gone = await t.app.inject({ method: 'GET', url: `${NODES}/n2`, headers: auth });
    expect(gone.statusCode).toBe(404);
  });

  it('a refused file prunes nothing', async () => {
    await expect(cli(t.app, ['nodes', 'import', '--prune', await file('nodes-bad.json', [{ metadata: { name: 'Bad_Name' } }])])).rejects.toThrow(/nothing changed/);
    expect((await listed()).map((item) => item.name)).toEqual(['n3', 'n1']);
  });
});

describe('nodes delete', () => {
  it('deletes one node by name and says when there is none', async () => {
    expect(await cli(t.app, ['nodes', 'delete', 'n3'])).toEqual({ name: 'n3', deleted: true });
    expect((await listed()).map((item) => item.name)).toEqual(['n1']);
    await expect(cli(t.app, ['nodes', 'delete', 'n3'])).rejects.toThrow(/node "n3" not found/);
  });
});
