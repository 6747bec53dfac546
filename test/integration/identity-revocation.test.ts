import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPlatformCommand } from '../../src/cli/platform-commands.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { addMember, apiKeyHeaders, authHeaders, createApiKey, createUser, login, warmOn, whoami, whoamiProbe } from '../helpers/platform.js';

/**
 * Two processes of one deployment (two apps on one database): a revoking write through either
 * is seen by the very next request on the other, although both cache resolved credentials.
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

const call = (t: TestApp, url: string, headers: Record<string, string>, payload?: object) => t.app.inject({ method: 'POST', url: `/api${url}`, headers, payload });

/** Resolves on both processes, so each holds the credential in its cache. */
const warm = (headers: Record<string, string>) => warmOn([a, b], headers);

async function keyIdOf(token: string, name: string): Promise<string> {
  const list = (await call(a, '/support/openapi/list', authHeaders(token))).json().data as { _id: string; name: string }[];
  return list.find((key) => key.name === name)?._id as string;
}

let counter = 0;
async function newOwner() {
  const username = `revoke-${++counter}`;
  const ids = await createUser(a, { username, password: 'revoke-pass-1' });
  return { ...ids, username, token: await login(a, username, 'revoke-pass-1') };
}

describe('revocation across processes', () => {
  it('logout through one process: the next request on the other is refused', async () => {
    const owner = await newOwner();
    await warm(authHeaders(owner.token));
    expect((await call(a, '/support/user/account/loginout', authHeaders(owner.token))).statusCode).toBe(200);
    expect((await whoami(b, authHeaders(owner.token))).statusCode).toBe(401);
  });

  it('a password change ends the other sessions everywhere, the caller keeps its own', async () => {
    const owner = await newOwner();
    const other = await login(b, owner.username, 'revoke-pass-1');
    await warm(authHeaders(other));
    await warm(authHeaders(owner.token));
    const changed = await call(a, '/support/user/account/updatePasswordByOld', authHeaders(owner.token), { oldPsw: 'revoke-pass-1', newPsw: 'revoke-pass-2' });
    expect(changed.statusCode).toBe(200);
    expect((await whoami(b, authHeaders(other))).statusCode).toBe(401);
    expect((await whoami(b, authHeaders(owner.token))).statusCode).toBe(200);
  });

  it('a password reset from the admin CLI: the next request on either process is refused', async () => {
    const owner = await newOwner();
    await warm(authHeaders(owner.token));
    await runPlatformCommand(['user', 'reset-password', '--username', owner.username, '--password', 'revoke-pass-3'], { config: a.config, db: a.app.mongo.db });
    expect((await whoami(b, authHeaders(owner.token))).statusCode).toBe(401);
    expect((await whoami(a, authHeaders(owner.token))).statusCode).toBe(401);
  });

  it('deleting or changing an API key through one process: the other refuses it or sees the change', async () => {
    const owner = await newOwner();
    const deleted = await createApiKey(a, owner.token, { name: 'to-delete' });
    const limited = await createApiKey(a, owner.token, { name: 'to-limit' });
    const renamed = await createApiKey(a, owner.token, { name: 'to-rename' });
    for (const key of [deleted, limited, renamed]) await warm(apiKeyHeaders(key));

    expect((await call(a, '/support/openapi/delete', authHeaders(owner.token), { id: await keyIdOf(owner.token, 'to-delete') })).statusCode).toBe(200);
    const refused = await whoami(b, apiKeyHeaders(deleted));
    expect(refused.statusCode).toBe(401);
    expect(refused.json()).toMatchObject({ statusText: 'unAuthApiKey' });

    const limit = { _id: await keyIdOf(owner.token, 'to-limit'), limit: { maxUsagePoints: 0 } };
    expect((await call(a, '/support/openapi/update', authHeaders(owner.token), limit)).statusCode).toBe(200);
    expect((await whoami(b, apiKeyHeaders(limited))).statusCode).toBe(403);

    const rename = { _id: await keyIdOf(owner.token, 'to-rename'), name: 'renamed' };
    expect((await call(a, '/support/openapi/update', authHeaders(owner.token), rename)).statusCode).toBe(200);
    expect((await whoami(b, apiKeyHeaders(renamed))).json().data).toMatchObject({ sourceName: 'renamed' });
  });

  it('a key reaching its usage limit through one process is refused by the other', async () => {
    const owner = await newOwner();
    const key = await createApiKey(a, owner.token, { name: 'metered', limit: { maxUsagePoints: 5 } });
    await warm(apiKeyHeaders(key));
    const apiKeyId = (await whoami(a, apiKeyHeaders(key))).json().data.apiKeyId as string;
    await a.app.platformAuth.addApiKeyUsage(apiKeyId, 2);
    expect((await whoami(b, apiKeyHeaders(key))).statusCode).toBe(200);
    await a.app.platformAuth.addApiKeyUsage(apiKeyId, 3);
    expect((await whoami(b, apiKeyHeaders(key))).statusCode).toBe(403);
  });

  it('member removal through one process: its sessions and keys are refused on the other', async () => {
    const owner = await newOwner();
    const member = await createUser(a, { username: `${owner.username}-member`, password: 'member-pass-1', teamId: owner.teamId, role: 'member', permission: 6 });
    const token = await login(a, `${owner.username}-member`, 'member-pass-1');
    const key = await createApiKey(a, token, { name: 'member key' });
    await warm(authHeaders(token));
    await warm(apiKeyHeaders(key));
    // Share links and team spaces act as their creator's member.
    expect(await b.app.identity.memberContext(member.tmbId)).toMatchObject({ tmbId: member.tmbId });
    await a.app.identity.teams.deleteMember(member.tmbId);
    expect((await whoami(b, authHeaders(token))).statusCode).toBe(401);
    expect((await whoami(b, apiKeyHeaders(key))).statusCode).toBe(401);
    expect(await b.app.identity.memberContext(member.tmbId)).toBeNull();
  });

  it('a role or team permission change through one process is seen by the other at once', async () => {
    const owner = await newOwner();
    const username = `${owner.username}-member`;
    await createUser(a, { username, password: 'member-pass-1', teamId: owner.teamId, role: 'member', permission: 4 });
    const token = await login(a, username, 'member-pass-1');
    await warm(authHeaders(token));
    expect((await whoami(b, authHeaders(token))).json().data).toMatchObject({ role: 'member', teamPermission: 4 });
    // As `team add-member` does for someone already in the team.
    await addMember(b, { teamId: owner.teamId, username, role: 'admin', permission: 7 });
    expect((await whoami(a, authHeaders(token))).json().data).toMatchObject({ role: 'admin', teamPermission: 7 });
  });
});

// An explicit revocation (a password change, a logout) moves the credential epoch even when it
// finds nothing left to delete: another request may have deleted the credential and not bumped
// yet (a slow connection, or a process that died between the two), and the answer says "ended"
// while another replica still trusted its cached copy for up to a minute.
describe('a password change ends every other session on every process', () => {
  it('even when a concurrent revocation (logout on a third process, stalled before its epoch bump) deleted the row first', async () => {
    await createUser(a, { username: 'race-user', password: 'race-pass-1' });
    const stolen = await login(a, 'race-user', 'race-pass-1');
    const own = await login(a, 'race-user', 'race-pass-1');
    await warmOn([a, b], authHeaders(stolen));
    const stolenSid = (await whoami(a, authHeaders(stolen))).json().data.sessionId as string;
    // Another process's logout of the stolen session: its row is deleted, its epoch bump not yet stored
    // (a slow or dropped connection, or the process died between the two).
    await a.app.mongo.db.collection('user_sessions').deleteOne({ _id: new ObjectId(stolenSid) });
    const changed = await a.app.inject({
      method: 'POST',
      url: '/api/support/user/account/updatePasswordByOld',
      headers: authHeaders(own),
      payload: { oldPsw: 'race-pass-1', newPsw: 'race-pass-2' },
    });
    expect(changed.statusCode, changed.body).toBe(200);
    // The change answered "other sessions ended": the stolen token must be refused everywhere now.
    expect((await whoami(b, authHeaders(stolen))).statusCode).toBe(401);
  });

  it('a logout of a session whose row another request already deleted still ends it everywhere', async () => {
    await createUser(a, { username: 'race-user-2', password: 'race-pass-1' });
    const token = await login(a, 'race-user-2', 'race-pass-1');
    await warmOn([a, b], authHeaders(token));
    const sid = (await whoami(a, authHeaders(token))).json().data.sessionId as string;
    await a.app.mongo.db.collection('user_sessions').deleteOne({ _id: new ObjectId(sid) });
    const out = await a.app.inject({ method: 'POST', url: '/api/support/user/account/loginout', headers: authHeaders(token) });
    expect(out.statusCode, out.body).toBe(200);
    expect((await whoami(b, authHeaders(token))).statusCode).toBe(401);
  });
});
