import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase, type PlatformCaller, platformCaller, type RealServer, startRealServer, waitFor } from '../helpers/real-process.js';

/**
 * Two real server processes on one database behind an imaginary load balancer (issue 13
 * point 2): a write through one is seen through the other, revocation is exact, and the
 * failed-login limit counts attempts made on both.
 */
let database: Awaited<ReturnType<typeof openTestDatabase>>;
let one: RealServer;
let two: RealServer;
let viaOne: PlatformCaller;
let viaTwo: PlatformCaller;

beforeAll(async () => {
  database = await openTestDatabase();
  // Only the first trains: a replica can opt out of the worker.
  one = await startRealServer(database.uri);
  two = await startRealServer(database.uri, { TRAINING_WORKER: 'false' });
  viaOne = await platformCaller(one);
  viaTwo = await platformCaller(two);
}, 120_000);

afterAll(async () => {
  await Promise.all([one?.stop(), two?.stop()]);
  await database?.close();
});

async function loginOn(server: RealServer, password: string) {
  return fetch(`${server.baseUrl}/api/support/user/account/loginByPassword`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'root', password }),
  });
}

describe('two server processes on one database', () => {
  it('an app created through one is in the next list of the other', async () => {
    const before = await viaTwo.ok<{ _id: string }[]>('POST', '/core/app/list', {});
    const appId = await viaOne.ok<string>('POST', '/core/app/create', { name: 'made on one', type: 'simple', modules: [], edges: [] });
    const after = await viaTwo.ok<{ _id: string; name: string }[]>('POST', '/core/app/list', {});
    expect(after.length).toBe(before.length + 1);
    expect(after.find((app) => app._id === appId)?.name).toBe('made on one');
  });

  it('data written through one is searchable through the other within 2 s', async () => {
    const datasetId = await viaOne.ok<string>('POST', '/core/dataset/create', { name: 'replicated' });
    const collectionId = await viaOne.ok<string>('POST', '/core/dataset/collection/create', { datasetId, name: 'c', type: 'virtual' });
    await viaOne.ok('POST', '/core/dataset/data/insertData', { collectionId, q: 'Seed item about harbours.' });
    // The other process opens the index first, then a new write must reach it.
    const search = (text: string) => viaTwo.ok<{ list: { q: string }[] }>('POST', '/core/dataset/searchTest', { datasetId, text, searchMode: 'fullTextRecall' });
    expect((await search('harbours')).list.map((item) => item.q)).toContain('Seed item about harbours.');
    await viaOne.ok('POST', '/core/dataset/data/insertData', { collectionId, q: 'A later item about lighthouses.' });
    await waitFor('the write on the other process', async () => (await search('lighthouses')).list.some((item) => item.q.includes('lighthouses')), { timeoutMs: 2_000, intervalMs: 100 });
  });

  it('a logout through one is refused at the next request on the other', async () => {
    const response = await loginOn(one, 'root-password-1');
    expect(response.status).toBe(200);
    const token = ((await response.json()) as { data: { token: string } }).data.token;
    // Used on the other process first, so that process has the session cached.
    const whoOnTwo = () => fetch(`${two.baseUrl}/api/support/user/account/tokenLogin`, { headers: { token } });
    expect((await whoOnTwo()).status).toBe(200);
    const logout = await fetch(`${one.baseUrl}/api/support/user/account/loginout`, { method: 'POST', headers: { token } });
    expect(logout.status).toBe(200);
    expect((await whoOnTwo()).status).toBe(401);
    // Other sessions of the same user are untouched.
    expect((await viaTwo.call('GET', '/support/user/account/tokenLogin')).status).toBe(200);
  });

  it('failed logins on both processes count toward one limit', async () => {
    for (let attempt = 0; attempt < 10; attempt++) {
      const response = await loginOn(attempt % 2 === 0 ? one : two, 'wrong-password');
      expect(response.status).not.toBe(200);
    }
    // The right password is now refused on either process: the account is blocked everywhere.
    for (const server of [one, two]) {
      const blocked = await loginOn(server, 'root-password-1');
      expect(blocked.status).toBe(429);
    }
  });
});
