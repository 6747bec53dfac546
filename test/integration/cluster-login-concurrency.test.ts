import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { cli, postToken } from '../fixtures/cluster/helpers.js';

/**
 * The account's 10 attempt slots count failures, not checks in progress: more than 10 checks of
 * a right password at once all succeed (they wait for a slot), while wrong passwords still
 * verify at most 10 per window.
 */
let t: TestApp;
const CLIENT = { client_id: 'kubesphere', client_secret: 'kubesphere' };
const NODES = '/kapis/resources.platform.io/v1alpha3/nodes';
const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
const grant = (username: string, password: string) => postToken(t.app, { grant_type: 'password', username, password, ...CLIENT });
const failures = (username: string) => t.app.mongo.db.collection('cluster_login_records').countDocuments({ username, success: false });

beforeAll(async () => {
  t = await buildTestApp();
  for (const name of ['robot', 'shared', 'mixed']) {
    await cli(t.app, ['user', 'add', '--username', name, '--email', `${name}@example.com`, '--password', 'Robot-pass1']);
  }
});
afterAll(async () => {
  await t.close();
});

describe('concurrent password checks of one account', () => {
  it('30 parallel Basic requests and 30 parallel grants with the right password all succeed', async () => {
    const requests = await Promise.all(Array.from({ length: 30 }, () => t.app.inject({ method: 'GET', url: NODES, headers: basic('robot', 'Robot-pass1') })));
    expect(requests.map((r) => r.statusCode)).toEqual(Array(30).fill(200));
    const grants = await Promise.all(Array.from({ length: 30 }, () => grant('robot', 'Robot-pass1')));
    expect(grants.map((r) => r.statusCode)).toEqual(Array(30).fill(200));
  });

  it('with 9 failures recorded, parallel right passwords still succeed through the last slot', async () => {
    for (let i = 0; i < 9; i++) expect((await grant('shared', 'wrong-pass1')).statusCode).toBe(400);
    const grants = await Promise.all(Array.from({ length: 12 }, () => grant('shared', 'Robot-pass1')));
    expect(grants.map((r) => r.statusCode)).toEqual(Array(12).fill(200));
  });

  it('right and wrong passwords at once: at most 10 wrong ones are checked, then the account blocks', async () => {
    const wrong = Array.from({ length: 30 }, () => grant('mixed', 'wrong-pass1'));
    const right = Array.from({ length: 10 }, () => grant('mixed', 'Robot-pass1'));
    const responses = await Promise.all([...wrong, ...right]);
    expect(await failures('mixed')).toBe(10);
    expect(responses.slice(0, 30).filter((r) => r.statusCode === 400)).toHaveLength(10);
    expect(responses.slice(0, 30).filter((r) => r.statusCode === 429)).toHaveLength(20);
    const account = await t.app.mongo.db.collection('cluster_users').findOne({ _id: 'mixed' as never });
    expect(account?.state).toBe('AuthLimitExceeded');
  });
});
