import type { FastifyInstance } from 'fastify';
import os from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { cli, fixture } from '../fixtures/cluster/helpers.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * Host registration across the processes of one deployment: replicas, and containers or pods
 * recreated under a new hostname, share a database, and the host is registered once for it.
 */
const REGISTER = { CLUSTER_REGISTER_HOST_NODE: 'true' };
const onMachine = (name: string) => (app: FastifyInstance) => {
  app.cluster.host.name = name;
};

let opened: TestApp[] = [];

/** The first process on a fresh database, as the machine `name`. */
async function firstStart(name: string, env: Record<string, string> = REGISTER): Promise<TestApp> {
  const first = await buildTestApp(env, onMachine(name));
  opened.push(first);
  return first;
}

/** Another process of `first`'s deployment, as the machine `name` (closed before `first`). */
async function nextStart(first: TestApp, name: string): Promise<TestApp> {
  const next = await buildReplica(first, REGISTER, onMachine(name));
  opened.unshift(next);
  return next;
}

const nodeNames = async (t: TestApp) =>
  (await t.app.mongo.db.collection('cluster_nodes').find({}, { projection: { _id: 1 } }).sort({ _id: 1 }).toArray()).map((node) => node._id);

afterEach(async () => {
  for (const t of opened) await t.close();
  opened = [];
});

describe('host registration, once per deployment', () => {
  it('a fresh database gets exactly the host node, named after the machine, with its real facts', async () => {
    const t = await firstStart('Web_0.Example');
    expect(await nodeNames(t)).toEqual(['web-0.example']);
    const stored = await t.app.mongo.db.collection<{ _id: string; json: string }>('cluster_nodes').findOne({ _id: 'web-0.example' });
    const node = JSON.parse(stored?.json ?? '{}');
    expect(node.metadata.labels['kubernetes.io/hostname']).toBe('web-0.example');
    expect(node.metadata.annotations['platform.io/registered-by']).toBe('host-registration');
    expect(node.status.capacity).toEqual({ cpu: String(os.availableParallelism()), memory: `${Math.floor(os.totalmem() / 1024)}Ki`, pods: '110' });
    expect(node.status.nodeInfo).toMatchObject({ kernelVersion: os.release(), operatingSystem: 'linux' });
    expect(node.status.conditions.find((condition: { type: string }) => condition.type === 'Ready').status).toBe('True');
    expect(node.status.addresses).toContainEqual({ type: 'Hostname', address: 'web-0.example' });
    expect(t.logs()).toContain('registered this host as a cluster node');
  });

  it('two replicas with different hostnames register one node, the first one to start', async () => {
    const first = await firstStart('web-7f9c-abcde');
    const second = await nextStart(first, 'web-7f9c-fghij');
    expect(await nodeNames(second)).toEqual(['web-7f9c-abcde']);
    expect(second.logs()).not.toContain('registered this host as a cluster node');
  });

  it('replicas starting together on an empty database register one node', async () => {
    // Registration off for the first process: the database is created empty, then three replicas start at once.
    const first = await firstStart('installer', {});
    await Promise.all(['web-a', 'web-b', 'web-c'].map((name) => nextStart(first, name)));
    expect(await nodeNames(first)).toHaveLength(1);
  });

  it('a restart under a new hostname (a recreated container) adds no node', async () => {
    const first = await firstStart('3f2a9c1d7b4e');
    await first.app.close();
    // The restarted process drops the database at the end, the first one being closed.
    opened = [];
    const restarted = await buildTestApp({ ...REGISTER, MONGODB_URI: first.config.MONGODB_URI }, onMachine('8e1b0d6c2a9f'));
    opened.push(restarted);
    expect(await nodeNames(restarted)).toEqual(['3f2a9c1d7b4e']);
  });

  it('a host node the operator removed stays removed across restarts', async () => {
    const first = await firstStart('web-0');
    await first.app.mongo.db.collection('cluster_nodes').deleteMany({});
    await nextStart(first, 'web-1');
    expect(await nodeNames(first)).toEqual([]);
  });

  it('a database with imported nodes gets no host node', async () => {
    const first = await firstStart('installer', {});
    await cli(first.app, ['nodes', 'import', fixture('nodes.json')]);
    const imported = await nodeNames(first);
    await nextStart(first, 'web-0');
    expect(await nodeNames(first)).toEqual(imported);
  });

  it('a database whose host an earlier version registered gets no second host node', async () => {
    // An earlier version registered its host and wrote no once-marker (registration off here: no marker).
    const first = await firstStart('old-host', {});
    expect(await first.app.cluster.nodes.registerHostNode()).toEqual({ name: 'old-host', created: true });
    await nextStart(first, 'new-host');
    expect(await nodeNames(first)).toEqual(['old-host']);
  });
});
