import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { bearer, cli, login, postToken } from '../fixtures/cluster/helpers.js';

/**
 * CLUSTER_MULTIPLE_LOGIN=false: two grants of one user issued a second apart (different `iat`,
 * so different pairs) that both reach the revocation of earlier sessions after both pairs are
 * stored. Exactly one session must survive: the later grant's.
 */
let t: TestApp;
const CLIENT = { client_id: 'kubesphere', client_secret: 'kubesphere' };
const NODES = '/kapis/resources.platform.io/v1alpha3/nodes';

beforeAll(async () => {
  t = await buildTestApp({ CLUSTER_MULTIPLE_LOGIN: 'false' });
  await cli(t.app, ['user', 'add', '--username', 'alice', '--email', 'alice@example.com', '--password', 'Alice-pass1']);
});
afterAll(async () => {
  await t.close();
});

/** Runs two grants whose second pair is issued one second later and whose revocations wait for each other. */
async function raceTwoGrants(grant: () => ReturnType<typeof postToken>) {
  const tokens = t.app.cluster.tokens;
  const originalIssue = tokens.issuePair;
  const originalRevoke = tokens.revokeEarlierSessions;
  let issued = 0;
  tokens.issuePair = async (username, extra) => {
    if (issued++ === 1) t.app.cluster.clock.advance(1000);
    return originalIssue(username, extra);
  };
  let arrived = 0;
  let release!: () => void;
  const bothArrived = new Promise<void>((resolve) => {
    release = resolve;
  });
  tokens.revokeEarlierSessions = async (...args) => {
    if (++arrived === 2) release();
    await bothArrived;
    return originalRevoke(...args);
  };
  try {
    const [a, b] = await Promise.all([grant(), grant()]);
    expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
    const pairs = [a.json(), b.json()] as { access_token: string; refresh_token: string }[];
    expect(pairs[0]?.access_token).not.toBe(pairs[1]?.access_token);
    const uses = await Promise.all(pairs.map((pair) => t.app.inject({ method: 'GET', url: NODES, headers: bearer(pair.access_token) })));
    return { statuses: uses.map((use) => use.statusCode), stored: await t.app.mongo.db.collection('cluster_tokens').countDocuments({ username: 'alice' }) };
  } finally {
    tokens.issuePair = originalIssue;
    tokens.revokeEarlierSessions = originalRevoke;
  }
}

describe('racing grants with multiple login off', () => {
  it('two refreshes of one refresh token a second apart leave exactly one session', async () => {
    t.app.cluster.clock.advance(5000);
    const pair0 = await login(t.app, 'alice', 'Alice-pass1');
    t.app.cluster.clock.advance(1000);
    const result = await raceTwoGrants(() => postToken(t.app, { grant_type: 'refresh_token', refresh_token: pair0.refresh_token, ...CLIENT }));
    expect(result.stored).toBe(2);
    expect([...result.statuses].sort()).toEqual([200, 401]);
  });

  it('two password logins a second apart leave exactly one session', async () => {
    t.app.cluster.clock.advance(5000);
    await login(t.app, 'alice', 'Alice-pass1');
    t.app.cluster.clock.advance(1000);
    const result = await raceTwoGrants(() => postToken(t.app, { grant_type: 'password', username: 'alice', password: 'Alice-pass1', ...CLIENT }));
    expect(result.stored).toBe(2);
    expect([...result.statuses].sort()).toEqual([200, 401]);
  });
});
