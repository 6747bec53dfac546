import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, login } from '../fixtures/cluster/helpers.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * Bounded work of selectors on the node list: at most 64 requirements per selector (400 Status
 * naming the parameter), `>`/`<` bounds read as the reference reads them (64-bit integers that
 * are label values; anything else makes the selector invalid), the keywords as keys, and page
 * numbers read as Go's int64, in both list strategies.
 */
const NODES = '/kapis/resources.platform.io/v1alpha3/nodes';
const ALL = ['n3', 'n2', 'n1'];

const node = (name: string, labels: Record<string, string>, created: string) => ({
  metadata: { name, creationTimestamp: created, labels, annotations: labels },
  status: { allocatable: { cpu: '2', memory: '4Gi' }, conditions: [{ type: 'Ready', status: 'True' }] },
});
const NODE_FILE = JSON.stringify({
  apiVersion: 'v1',
  kind: 'List',
  items: [
    node('n1', { tier: '1', big: '9223372036854775807' }, '2024-03-01T00:00:01Z'),
    node('n2', { tier: '5', big: '99999999999999999999' }, '2024-03-01T00:00:02Z'),
    node('n3', { tier: '9' }, '2024-03-01T00:00:03Z'),
  ],
});

/** `k0>0,k1>0,…` with `count` requirements. */
const manyRequirements = (count: number) => Array.from({ length: count }, (_, index) => `k${index}>0`).join(',');

for (const strategy of ['auto', 'database'] as const) {
  describe(`selector limits (CLUSTER_NODE_QUERY=${strategy})`, () => {
    let t: TestApp;
    let token: string;
    const list = (query: string) => t.app.inject({ method: 'GET', url: `${NODES}?${query}`, headers: bearer(token) });
    const names = async (query: string) => {
      const response = await list(query);
      expect(response.statusCode, response.body).toBe(200);
      return (response.json() as { items: { metadata: { name: string } }[] }).items.map((item) => item.metadata.name);
    };

    beforeAll(async () => {
      t = await buildTestApp({ CLUSTER_NODE_QUERY: strategy });
      await t.app.cluster.nodes.importNodes(NODE_FILE);
      token = (await login(t.app)).access_token;
    });
    afterAll(async () => {
      await t.close();
    });

    it.each(['labelSelector', 'label', 'annotation'])('%s with 65 requirements is a 400 Status naming it; 64 are answered', async (parameter) => {
      const refused = await list(`${parameter}=${encodeURIComponent(manyRequirements(65))}`);
      expect(refused.statusCode).toBe(400);
      expect(refused.json()).toEqual({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `${parameter}: 65 requirements, at most 64 are allowed`,
        reason: 'BadRequest',
        code: 400,
      });
      expect(await names(`${parameter}=${encodeURIComponent(manyRequirements(64))}`)).toEqual([]);
      // Requirements of every kind count, not only `>`/`<`.
      const mixed = Array.from({ length: 70 }, (_, index) => `tier!=x${index}`).join(',');
      expect((await list(`${parameter}=${encodeURIComponent(mixed)}`)).statusCode).toBe(400);
    });

    it('a bound beyond 64 bits makes the selector invalid, as the reference: labelSelector ignored, label matches nothing', async () => {
      const huge = `tier>${'9'.repeat(15_000)}`;
      expect(await names(`labelSelector=${encodeURIComponent(huge)}`)).toEqual(ALL);
      expect(await names(`label=${encodeURIComponent(huge)}`)).toEqual([]);
      expect(await names(`labelSelector=${encodeURIComponent('tier>9223372036854775808')}`)).toEqual(ALL);
      expect(await names(`labelSelector=${encodeURIComponent('tier<-9223372036854775809')}`)).toEqual(ALL);
    });

    it('bounds within 64 bits (leading zeros allowed) compare; label values beyond 64 bits match nothing', async () => {
      expect(await names(`labelSelector=${encodeURIComponent('tier>4')}`)).toEqual(['n3', 'n2']);
      expect(await names(`labelSelector=${encodeURIComponent(`tier>${'0'.repeat(40)}4`)}`)).toEqual(['n3', 'n2']);
      expect(await names(`labelSelector=${encodeURIComponent('big>9223372036854775806')}`)).toEqual(['n1']);
      expect(await names(`labelSelector=${encodeURIComponent('big>0')}`)).toEqual(['n1']);
      expect(await names(`label=${encodeURIComponent('big<9223372036854775807')}`)).toEqual([]);
    });

    it('a negative bound is not a label value: the selector is invalid, as in apimachinery', async () => {
      for (const selector of ['tier>-1', 'tier<-5', 'tier>0,big<-2']) {
        expect(await names(`labelSelector=${encodeURIComponent(selector)}`)).toEqual(ALL);
        expect(await names(`label=${encodeURIComponent(selector)}`)).toEqual([]);
      }
    });

    it('`in` and `notin` are label keys where a key is read', async () => {
      expect(await names('labelSelector=in')).toEqual([]);
      expect(await names(`labelSelector=${encodeURIComponent('!in')}`)).toEqual(ALL);
      expect(await names(`labelSelector=${encodeURIComponent('notin=x,tier=1')}`)).toEqual([]);
      expect(await names(`labelSelector=${encodeURIComponent('notin!=x,tier=1')}`)).toEqual(['n1']);
    });

    it('a page Go reads as int64 beyond 2^53 is past the end, not page 1', async () => {
      const response = await list('limit=10&page=10000000000000000');
      expect(response.json()).toEqual({ items: [], totalItems: 3 });
      expect(await names('limit=2&page=99999999999999999999')).toEqual(['n3', 'n2']);
      expect(await names('limit=100000000000000000')).toEqual(ALL);
    });
  });
}
