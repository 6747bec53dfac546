import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { authHeaders, createUser, login, warmOn, whoami, whoamiProbe } from '../helpers/platform.js';

/**
 * An explicit revocation (a password change, a logout) moves the credential epoch even when it
 * finds nothing left to delete: another request may have deleted the credential and not bumped
 * yet (a slow connection, or a process that died between the two), and the answer says "ended"
 * while another replica still trusted its cached copy for up to a minute.
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
