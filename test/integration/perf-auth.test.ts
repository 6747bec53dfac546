import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDENTIALS_LEASE_MS, isCredentialEpochKey } from '../../src/platform/identity/credential-epoch.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { commandsDuring, type RecordedCommand } from '../helpers/command-counter.js';
import { apiKeyHeaders, authHeaders, createApiKey, createUser, login, whoamiProbe } from '../helpers/platform.js';

/** Collections authenticating an owner reads or writes (apps and datasets share resource_permissions). */
const IDENTITY = new Set(['user_sessions', 'team_members', 'users', 'teams', 'openapis', 'version_stamps']);
/** The epoch's check: one `_id` read of the revocation link after the end this process knows. */
const EPOCH_READ = { name: 'find', collection: 'version_stamps', key: expect.stringMatching(/^identity:credentials@\d+$/) };
/** Identity's commands; other version stamps (a list's read model, e.g. `datasets:<teamId>`) are the route's own. */
const isIdentity = (command: RecordedCommand) => IDENTITY.has(command.collection) && (command.collection !== 'version_stamps' || isCredentialEpochKey(command.key));

let t: TestApp;
let token: string;
let key: string;

beforeAll(async () => {
  t = await buildTestApp({}, whoamiProbe);
  await createUser(t, { username: 'perf-owner', password: 'perf-pass-1' });
  token = await login(t, 'perf-owner', 'perf-pass-1');
  key = await createApiKey(t, token, { name: 'perf key' });
});

afterAll(async () => {
  await t.close();
});

const get = (url: string, headers: Record<string, string>) => t.app.inject({ method: 'GET', url: `/api${url}`, headers });

/** The commands of one request: its status, and those it sent to the identity collections. */
async function costOf(url: string, headers: Record<string, string>) {
  let status = 0;
  const commands = await commandsDuring(t.app, async () => {
    status = (await get(url, headers)).statusCode;
  });
  return { status, all: commands, identity: commands.filter(isIdentity) };
}

describe('authentication cost per request', () => {
  it('a repeated session request reads only the credential epoch, and not even that inside its lease', async () => {
    const fresh = await login(t, 'perf-owner', 'perf-pass-1');
    // The login itself read the epoch: let that lease pass so the first use reads it again.
    await sleep(CREDENTIALS_LEASE_MS + 20);
    const cold = await costOf('/test/whoami', authHeaders(fresh));
    expect(cold.status).toBe(200);
    // Resolving a session the first time: the epoch, then session, member and user.
    expect(cold.all.map((command) => command.collection)).toEqual(expect.arrayContaining(['version_stamps', 'user_sessions', 'team_members', 'users']));

    // Past the lease the epoch is read again: that one small read is all.
    await sleep(CREDENTIALS_LEASE_MS + 20);
    const warm = await costOf('/test/whoami', authHeaders(fresh));
    expect(warm).toMatchObject({ status: 200, all: [EPOCH_READ] });
    const again = await costOf('/test/whoami', authHeaders(fresh));
    expect(again.status).toBe(200);
    expect(again.all.length).toBeLessThanOrEqual(1);
    expect(again.all.every((command) => command.collection === 'version_stamps')).toBe(true);

    // A real session route: the handler's own reads only, nothing about the caller.
    await sleep(CREDENTIALS_LEASE_MS + 20);
    const route = await costOf('/support/user/team/limit/datasetSizeLimit', authHeaders(fresh));
    expect(route).toMatchObject({ status: 200, identity: [EPOCH_READ] });
  });

  it('a repeated API-key request reads only the epoch and does not write lastUsedTime again', async () => {
    const cold = await costOf('/test/whoami', apiKeyHeaders(key));
    expect(cold.status).toBe(200);
    expect(cold.all).toEqual(expect.arrayContaining([{ name: 'find', collection: 'openapis' }, { name: 'update', collection: 'openapis' }]));

    await sleep(CREDENTIALS_LEASE_MS + 20);
    const warm = await costOf('/test/whoami', apiKeyHeaders(key));
    expect(warm).toMatchObject({ status: 200, all: [EPOCH_READ] });

    await sleep(CREDENTIALS_LEASE_MS + 20);
    const route = await costOf('/core/dataset/list', apiKeyHeaders(key));
    expect(route).toMatchObject({ status: 200, identity: [EPOCH_READ] });
  });
});

describe('API key lastUsedTime', () => {
  const lastUsedTime = async (name: string) => {
    const list = (await get('/support/openapi/list', authHeaders(token))).json().data as { name: string; lastUsedTime?: string }[];
    return list.find((entry) => entry.name === name)?.lastUsedTime;
  };

  it('is written at most once a minute per key, by any process', async () => {
    const clockKey = await createApiKey(t, token, { name: 'clock key' });
    const clock = t.app.identity.clock;
    const start = Date.now() + 3600_000;
    const at = (offsetMs: number) => {
      clock.now = () => start + offsetMs;
    };
    const second = await buildTestApp({ MONGODB_URI: t.config.MONGODB_URI }, whoamiProbe);
    try {
      at(0);
      expect((await get('/test/whoami', apiKeyHeaders(clockKey))).statusCode).toBe(200);
      expect(await lastUsedTime('clock key')).toBe(new Date(start).toISOString());

      // Within the minute: no write (not even a command) however often the key is used.
      at(30_000);
      const within = await costOf('/test/whoami', apiKeyHeaders(clockKey));
      expect(within.all.filter((command) => command.collection === 'openapis')).toEqual([]);
      expect(await lastUsedTime('clock key')).toBe(new Date(start).toISOString());

      // Another process that has not used the key yet does not overwrite a recent value.
      second.app.identity.clock.now = () => start + 40_000;
      expect((await second.app.inject({ method: 'GET', url: '/api/test/whoami', headers: apiKeyHeaders(clockKey) })).statusCode).toBe(200);
      expect(await lastUsedTime('clock key')).toBe(new Date(start).toISOString());

      // A minute later the next use writes it again.
      at(61_000);
      expect((await get('/test/whoami', apiKeyHeaders(clockKey))).statusCode).toBe(200);
      expect(await lastUsedTime('clock key')).toBe(new Date(start + 61_000).toISOString());
    } finally {
      clock.now = () => Date.now();
      await second.app.close();
    }
  });
});
