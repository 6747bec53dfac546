import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { call, ok } from './apps-helpers.js';

/**
 * Versions hold the whole workflow, secrets in HTTP node headers included. A member who may only
 * read (use) the app sees neither the editable detail nor the versions; editors see both.
 */
let t: TestApp;
let owner: string;
let reader: string;
let writer: string;
let appId: string;
let versionId: string;
const SECRET = 'Bearer sk-secret-in-an-http-node';

beforeAll(async () => {
  t = await buildTestApp();
  const boss = await createUser(t, { username: 'sv-owner', password: 'password-1' });
  const r = await createUser(t, { username: 'sv-reader', password: 'password-1', teamId: boss.teamId, role: 'member', permission: 4 });
  const w = await createUser(t, { username: 'sv-writer', password: 'password-1', teamId: boss.teamId, role: 'member', permission: 6 });
  owner = await login(t, 'sv-owner', 'password-1');
  reader = await login(t, 'sv-reader', 'password-1');
  writer = await login(t, 'sv-writer', 'password-1');
  const nodes = [
    { nodeId: 'start', flowNodeType: 'workflowStart', inputs: [], outputs: [] },
    { nodeId: 'http', flowNodeType: 'httpRequest468', inputs: [{ key: 'system_httpHeader', value: [{ key: 'Authorization', type: 'string', value: SECRET }] }], outputs: [] },
  ];
  appId = await ok(t, owner, 'POST', '/core/app/create', { name: 'with secret', type: 'advanced', modules: nodes, edges: [] });
  await ok(t, owner, 'POST', `/core/app/version/publish?appId=${appId}`, { nodes, edges: [], isPublish: true, versionName: 'v1' });
  await ok(t, owner, 'POST', '/core/app/collaborator/update', { appId, tmbIds: [r.tmbId], permission: 4 });
  await ok(t, owner, 'POST', '/core/app/collaborator/update', { appId, tmbIds: [w.tmbId], permission: 6 });
  versionId = (await ok(t, owner, 'POST', '/core/app/version/list', { appId })).list[0]._id;
});
afterAll(() => t.close());

describe('app versions need write', () => {
  it('a read-only member gets 403 from version/list and version/detail, and no workflow anywhere', async () => {
    for (const [method, url, payload] of [
      ['POST', '/core/app/version/list', { appId, current: 1, pageSize: 10 }],
      ['GET', '/core/app/version/list', { appId }],
      ['GET', '/core/app/version/detail', { appId, versionId }],
      ['POST', '/core/app/version/detail', { appId, versionId }],
      ['GET', '/core/app/version/latest', { appId }],
    ] as const) {
      const r = await call(t, reader, method, url, payload);
      expect(r.status, `${method} ${url}`).toBe(403);
      expect(r.body.statusText).toBe('unAuthApp');
      expect(JSON.stringify(r.body)).not.toContain(SECRET);
    }
    // What a reader may still see carries no workflow.
    const detail = await ok(t, reader, 'GET', '/core/app/detail', { appId });
    expect(detail.modules).toEqual([]);
    const history = await ok(t, reader, 'POST', '/core/app/version/listWorkflow', { appId });
    expect(history.total).toBe(2); // the initial version of the create, then the publish
    expect(history.list[0]).not.toHaveProperty('nodes');
    expect(JSON.stringify(history)).not.toContain(SECRET);
  });

  it('an editor reads full versions', async () => {
    const list = await ok(t, writer, 'POST', '/core/app/version/list', { appId });
    expect(JSON.stringify(list.list[0].nodes)).toContain(SECRET);
    const version = await ok(t, writer, 'GET', '/core/app/version/detail', { appId, versionId });
    expect(version).toMatchObject({ _id: versionId, versionName: 'v1' });
  });
});
