import type { FastifyInstance } from 'fastify';
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settleExpiredInserts } from '../../src/platform/apps/app-insert-resume.js';
import { createAppsRepo } from '../../src/platform/apps/apps.repo.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { ok, simpleNodes } from './apps-helpers.js';

/**
 * Writes found by the cache audit that did not reach other processes: two processes of one
 * deployment (a, b) on one database, both holding what they cached before the write.
 */
let a: TestApp;
let b: TestApp;

const whoamiProbe = (app: FastifyInstance) => {
  app.register(
    async (api) => {
      api.get('/test/whoami', async (request) => ({ code: 200, data: await app.platformAuth.authenticate(request, ['session', 'apiKey']) }));
    },
    { prefix: '/api' },
  );
};

beforeAll(async () => {
  a = await buildTestApp({}, whoamiProbe);
  b = await buildTestApp({ MONGODB_URI: a.config.MONGODB_URI }, whoamiProbe);
});

afterAll(async () => {
  await b.app.close();
  await a.close();
});

let counter = 0;
async function newOwner() {
  const username = `audit-${++counter}`;
  const ids = await createUser(a, { username, password: 'audit-pass-1' });
  return { ...ids, username, token: await login(a, username, 'audit-pass-1') };
}

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
