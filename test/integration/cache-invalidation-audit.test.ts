import type { Db } from 'mongodb';
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settleExpiredInserts } from '../../src/platform/apps/app-insert-resume.js';
import { createAppsRepo } from '../../src/platform/apps/apps.repo.js';
import { createApiKeysRepo } from '../../src/platform/identity/api-keys.repo.js';
import { createCredentialEpoch } from '../../src/platform/identity/credential-epoch.js';
import { createSessionsRepo } from '../../src/platform/identity/sessions.repo.js';
import { createTeamsRepo } from '../../src/platform/identity/teams.repo.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { apiKeyHeaders, authHeaders, createApiKey, createUser, login, warmOn, whoami, whoamiProbe } from '../helpers/platform.js';
import { ok, simpleNodes } from './apps-helpers.js';

/**
 * Writes found by the cache audit that did not reach other processes: two processes of one
 * deployment (a, b) on one database, both holding what they cached before the write.
 */
let a: TestApp;
let b: TestApp;

beforeAll(async () => {
  a = await buildTestApp({}, whoamiProbe);
  b = await buildReplica(a, {}, whoamiProbe);
});

afterAll(async () => {
  await b.close();
  await a.close();
});

const warm = (headers: Record<string, string>) => warmOn([a, b], headers);

let counter = 0;
async function newOwner() {
  const username = `audit-${++counter}`;
  const ids = await createUser(a, { username, password: 'audit-pass-1' });
  return { ...ids, username, token: await login(a, username, 'audit-pass-1') };
}

type Method = 'deleteOne' | 'deleteMany' | 'updateOne';

/**
 * The database as a repository sees it, with one command of one collection failing: `applied`
 * runs it first (its answer lost, as on a dropped connection), otherwise it fails unapplied.
 */
function failingDb(db: Db, collection: string, method: Method, applied: boolean): Db {
  return new Proxy(db, {
    get(target, property, receiver) {
      if (property !== 'collection') return Reflect.get(target, property, receiver);
      return (name: string) => {
        const real = target.collection(name);
        if (name !== collection) return real;
        return new Proxy(real, {
          get(col, key) {
            const value = Reflect.get(col, key);
            if (key !== method) return typeof value === 'function' ? value.bind(col) : value;
            return async (...args: unknown[]) => {
              if (applied) await (value as (...x: unknown[]) => Promise<unknown>).apply(col, args);
              throw new Error(`simulated database failure (${collection}.${method})`);
            };
          },
        });
      };
    },
  });
}

describe('a revoking write that fails midway still reaches every process', () => {
  it('a logout whose answer was lost: the session is refused on the other process', async () => {
    const owner = await newOwner();
    await warm(authHeaders(owner.token));
    const sessionId = (await whoami(a, authHeaders(owner.token))).json().data.sessionId as string;
    const db = a.app.mongo.db;
    const sessions = createSessionsRepo(failingDb(db, 'user_sessions', 'deleteOne', true), createCredentialEpoch(db));
    await expect(sessions.revoke(sessionId)).rejects.toThrow(/simulated/);
    // Retrying finds nothing left to delete: the failed attempt itself must have told the others.
    await sessions.revoke(sessionId).catch(() => undefined);
    expect((await whoami(b, authHeaders(owner.token))).statusCode).toBe(401);
  });

  it('a member removal that fails after the member went: its session is refused on the other process', async () => {
    const owner = await newOwner();
    const username = `${owner.username}-member`;
    const member = await createUser(a, { username, password: 'member-pass-1', teamId: owner.teamId, role: 'member', permission: 4 });
    const token = await login(a, username, 'member-pass-1');
    await warm(authHeaders(token));
    const db = a.app.mongo.db;
    const teams = createTeamsRepo(failingDb(db, 'resource_permissions', 'deleteMany', false), createCredentialEpoch(db));
    await expect(teams.deleteMember(member.tmbId)).rejects.toThrow(/simulated/);
    expect((await whoami(b, authHeaders(token))).statusCode).toBe(401);
  });

  it('an API key delete whose answer was lost: the key is refused on the other process', async () => {
    const owner = await newOwner();
    const key = await createApiKey(a, owner.token, { name: 'lost answer' });
    await warm(apiKeyHeaders(key));
    const keyId = (await whoami(a, apiKeyHeaders(key))).json().data.apiKeyId as string;
    const db = a.app.mongo.db;
    const keys = createApiKeysRepo(failingDb(db, 'openapis', 'deleteOne', true), createCredentialEpoch(db));
    await expect(keys.delete(keyId, owner.teamId)).rejects.toThrow(/simulated/);
    expect((await whoami(b, apiKeyHeaders(key))).statusCode).toBe(401);
  });
});

describe('a resumed app insert reaches every process', () => {
  it('an insert whose document landed before a crash (no list bump) is listed everywhere once settled', async () => {
    const owner = await newOwner();
    const list = async (t: TestApp) => ((await ok(t, owner.token, 'POST', '/core/app/list', {})) as { _id: string }[]).map((x) => x._id);
    expect(await list(a)).toEqual([]);
    expect(await list(b)).toEqual([]);
    // The crash: the insert's record and its app document were written, the stamp never bumped.
    const { core, deps } = a.app.apps;
    const appId = new ObjectId().toHexString();
    await deps.inserts.open(appId, owner.teamId, 0);
    await createAppsRepo(a.app.mongo.db, async () => undefined).insert({
      _id: appId,
      parentId: null,
      teamId: owner.teamId,
      tmbId: owner.tmbId,
      name: 'landed before the crash',
      type: 'simple',
      version: 'v2',
      avatar: '',
      intro: '',
      updateTime: new Date(),
      teamTags: [],
      modulesJson: JSON.stringify(simpleNodes),
      edgesJson: '[]',
      pluginData: { nodeVersion: '481' },
      defaultPermission: 0,
      inheritPermission: true,
    });
    await a.app.mongo.db.collection('app_inserts').updateOne({ _id: new ObjectId(appId) }, { $set: { expiresAt: new Date(Date.now() - 1000) } });

    expect(await settleExpiredInserts(core, deps)).toBe(1);
    expect(await list(b)).toEqual([appId]);
    expect(await list(a)).toEqual([appId]);
  });
});
