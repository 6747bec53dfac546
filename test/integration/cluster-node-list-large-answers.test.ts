import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, cli, login } from '../fixtures/cluster/helpers.js';

/**
 * Node lists of more than one slice of nodes (built with yields, report-loop-audit #7) send the
 * bytes the small pages send for the same nodes: the unpaged answer is the pages' items joined.
 */
let t: TestApp;
let auth: Record<string, string>;
const BASE = '/kapis/resources.platform.io/v1alpha3/nodes';
const COUNT = 650;

const name = (index: number) => `node-${String(index).padStart(4, '0')}`;
function nodeFile() {
  const items = Array.from({ length: COUNT }, (_, index) => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: name(index),
      creationTimestamp: new Date(Date.UTC(2024, 0, 1) + ((index * 7919) % 400) * 60_000).toISOString(),
      labels: { zone: `z${index % 3}`, rank: String(index % 17) },
      annotations: { note: `é"\\ ${index}` },
    },
    spec: index % 7 === 0 ? { unschedulable: true } : {},
    status: { allocatable: { cpu: '8', memory: '32Gi' }, conditions: [{ type: 'Ready', status: 'True' }] },
  }));
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
}

async function get(query: string) {
  const response = await t.app.inject({ method: 'GET', url: `${BASE}?${query}`, headers: auth });
  expect(response.statusCode, response.body.slice(0, 500)).toBe(200);
  return response;
}

/** The answer as small pages (100 nodes, rendered and serialised as before) put together. */
async function fromSmallPages(query: string): Promise<string> {
  const items: string[] = [];
  let totalItems = 0;
  for (let page = 1; ; page++) {
    const body = (await get(`${query}&limit=100&page=${page}`)).body;
    totalItems = (JSON.parse(body) as { totalItems: number }).totalItems;
    const inner = body.slice('{"items":['.length, body.lastIndexOf('],"totalItems":'));
    if (inner === '') break;
    items.push(inner);
  }
  return `{"items":[${items.join(',')}],"totalItems":${totalItems}}`;
}

beforeAll(async () => {
  t = await buildTestApp({ CLUSTER_NODE_QUERY: 'auto' });
  auth = bearer((await login(t.app)).access_token);
  const file = join(await mkdtemp(join(tmpdir(), 'large-node-lists-')), 'nodes.json');
  await writeFile(file, nodeFile());
  await cli(t.app, ['nodes', 'import', file]);
}, 120_000);

afterAll(async () => {
  await t?.close();
});

describe('large node lists over HTTP', () => {
  it('sends the same bytes as the small pages, sorted and selected, fresh and memoised', async () => {
    for (const query of ['x=1', 'sortBy=name', 'sortBy=name&ascending=true', 'labelSelector=zone!%3Dz1', 'labelSelector=rank>4&ascending=true', 'name=node-0']) {
      const expected = await fromSmallPages(query);
      const fresh = await get(query);
      expect({ query, same: fresh.body === expected }).toEqual({ query, same: true });
      expect(fresh.headers['content-type']).toBe('application/json; charset=utf-8');
      expect((await get(query)).body === expected).toBe(true);
    }
    // A large page: the whole list's window.
    const whole = await get('sortBy=name&ascending=true');
    const page = await get('sortBy=name&ascending=true&limit=300&page=2');
    const items = (JSON.parse(whole.body) as { items: unknown[] }).items.slice(300, 600);
    expect(page.body).toBe(JSON.stringify({ items: JSON.parse(JSON.stringify(items)), totalItems: COUNT }));
  });
});
