import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { apiKeyHeaders, authHeaders, createApiKey, createUser, login } from '../helpers/platform.js';

let t: TestApp;
let ownerA: string;
let ownerB: string;
let teamA: string;

beforeAll(async () => {
  t = await buildTestApp({}, (app) => {
    // A probe that reports who the credential resolves to.
    app.register(
      async (api) => {
        api.get('/test/whoami', async (request) => ({ code: 200, data: await app.platformAuth.authenticate(request, ['session', 'apiKey']) }));
      },
      { prefix: '/api' },
    );
  });
  teamA = (await createUser(t, { username: 'key-owner-a', password: 'password-a' })).teamId;
  await createUser(t, { username: 'key-owner-b', password: 'password-b' });
  ownerA = await login(t, 'key-owner-a', 'password-a');
  ownerB = await login(t, 'key-owner-b', 'password-b');
});

afterAll(async () => {
  await t.close();
});

const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, headers: Record<string, string>, payload?: object) =>
  t.app.inject({ method, url: `/api${url}`, headers, payload });
const listKeys = async (token: string, query = '') => (await call('GET', `/support/openapi/list${query}`, authHeaders(token))).json().data as Record<string, unknown>[];

describe('API keys', () => {
  it('shows the key once, stores only its digest, lists it masked and authenticates with it', async () => {
    const key = await createApiKey(t, ownerA, { name: 'first' });
    expect(key).toMatch(/^fastgpt-[a-z][a-zA-Z0-9]{51,64}$/);
    const stored = await t.app.mongo.db.collection('openapis').findOne({ name: 'first' });
    expect(JSON.stringify(stored)).not.toContain(key.slice(8));
    const list = await listKeys(ownerA);
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ name: 'first', apiKey: `******${key.slice(-4)}`, usagePoints: 0, limit: { maxUsagePoints: -1 }, teamId: teamA });
    expect(list[0]?.lastUsedTime).toBeUndefined();

    const who = await call('GET', '/test/whoami', apiKeyHeaders(key));
    expect(who.statusCode).toBe(200);
    expect(who.json().data).toMatchObject({ authType: 'apikey', teamId: teamA, sourceName: 'first' });
    expect((await listKeys(ownerA))[0]?.lastUsedTime).toBeTruthy();

    // The legacy form carries the app id after the key: a request to use that app, not a binding.
    const appId = new ObjectId().toHexString();
    const legacy = await call('GET', '/test/whoami', { authorization: `Bearer ${key}-${appId}` });
    expect(legacy.json().data).toMatchObject({ legacyAppId: appId });
    expect(legacy.json().data.appId).toBeUndefined();
  });

  it('refuses unknown, malformed and session-only uses of keys', async () => {
    const unknown = await call('GET', '/test/whoami', apiKeyHeaders('fastgpt-notakey'));
    expect(unknown.statusCode).toBe(401);
    expect(unknown.json()).toMatchObject({ code: 514, statusText: 'unAuthApiKey' });
    // A value of no key shape is a key that does not exist (as the reference's lookup finds none); no value, a header written wrong.
    expect((await call('GET', '/test/whoami', { authorization: 'Bearer a-b-c-d' })).json()).toMatchObject({ code: 514, statusText: 'unAuthApiKey' });
    const bare = await call('GET', '/test/whoami', { authorization: 'Bearer' });
    expect(bare.statusCode).toBe(401);
    expect(bare.json().statusText).toBe('unAuthorization');
    const key = await createApiKey(t, ownerA, { name: 'session-only' });
    const refused = await call('GET', '/support/openapi/list', apiKeyHeaders(key));
    expect(refused.statusCode).toBe(401);
  });

  it('refuses an expired key once the clock passes expiredTime', async () => {
    const clock = t.app.identity.clock;
    const start = Date.now();
    const key = await createApiKey(t, ownerA, { name: 'expiring', limit: { expiredTime: new Date(start + 3600_000).toISOString(), maxUsagePoints: -1 } });
    expect((await call('GET', '/test/whoami', apiKeyHeaders(key))).statusCode).toBe(200);
    clock.now = () => start + 2 * 3600_000;
    try {
      const expired = await call('GET', '/test/whoami', apiKeyHeaders(key));
      expect(expired.statusCode).toBe(401);
      expect(expired.json()).toMatchObject({ code: 506001, statusText: 'openapiUnAuth' });
    } finally {
      clock.now = () => Date.now();
    }
  });

  it('counts usage points and refuses a key over maxUsagePoints', async () => {
    const key = await createApiKey(t, ownerA, { name: 'metered', limit: { maxUsagePoints: 5 } });
    const id = (await listKeys(ownerA)).find((item) => item.name === 'metered')?._id as string;
    const auth = t.app.platformAuth;
    await auth.addApiKeyUsage(id, 3);
    expect((await call('GET', '/test/whoami', apiKeyHeaders(key))).statusCode).toBe(200);
    await auth.addApiKeyUsage(id, 2);
    const over = await call('GET', '/test/whoami', apiKeyHeaders(key));
    expect(over.statusCode).toBe(403);
    expect(over.json()).toMatchObject({ code: 506001, statusText: 'openapiUnAuth' });
    expect((await listKeys(ownerA)).find((item) => item._id === id)?.usagePoints).toBe(5);
    // Raising the limit makes it usable again.
    expect((await call('PUT', '/support/openapi/update', authHeaders(ownerA), { _id: id, limit: { maxUsagePoints: 100 } })).statusCode).toBe(200);
    expect((await call('GET', '/test/whoami', apiKeyHeaders(key))).statusCode).toBe(200);
  });

  it('updates the name only, deletes, and validates input', async () => {
    await createApiKey(t, ownerA, { name: 'to-rename', limit: { maxUsagePoints: 7 } });
    const id = (await listKeys(ownerA)).find((item) => item.name === 'to-rename')?._id as string;
    // The spec's GET forms take the same parameters from the query string.
    const viaGet = await call('GET', `/support/openapi/update?_id=${id}&name=renamed-by-get`, authHeaders(ownerA));
    expect(viaGet.statusCode).toBe(200);
    expect((await listKeys(ownerA)).find((item) => item._id === id)?.name).toBe('renamed-by-get');
    const created = await call('GET', '/support/openapi/create?name=by-get', authHeaders(ownerA));
    expect(created.json().data).toMatch(/^fastgpt-/);
    const renamed = await call('PUT', '/support/openapi/update', authHeaders(ownerA), { _id: id, name: 'renamed' });
    expect(renamed.json()).toEqual({ code: 200, statusText: '', message: '', data: null });
    expect((await listKeys(ownerA)).find((item) => item._id === id)).toMatchObject({ name: 'renamed', limit: { maxUsagePoints: 7 } });
    // An empty name keeps the old one, as the reference skips it.
    expect((await call('PUT', '/support/openapi/update', authHeaders(ownerA), { _id: id, name: '' })).statusCode).toBe(200);
    expect((await listKeys(ownerA)).find((item) => item._id === id)?.name).toBe('renamed');
    const bad = await call('POST', '/support/openapi/create', authHeaders(ownerA), { name: 'x', limit: { maxUsagePoints: -5 } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toContain('limit.maxUsagePoints');
    expect((await call('DELETE', '/support/openapi/delete', authHeaders(ownerA))).json()).toMatchObject({ statusText: 'missingParams' });
    const deleted = await call('DELETE', `/support/openapi/delete?id=${id}`, authHeaders(ownerA));
    expect(deleted.json().data).toEqual({});
    expect((await listKeys(ownerA)).some((item) => item._id === id)).toBe(false);
  });

  it('keeps teams apart: team B cannot see, change or delete team A keys', async () => {
    const keyA = await createApiKey(t, ownerA, { name: 'guarded' });
    const id = (await listKeys(ownerA)).find((item) => item.name === 'guarded')?._id as string;
    expect((await listKeys(ownerB)).some((item) => item._id === id)).toBe(false);
    const update = await call('PUT', '/support/openapi/update', authHeaders(ownerB), { _id: id, name: 'stolen' });
    expect(update.statusCode).toBe(404);
    expect(update.json().statusText).toBe('openapiUnExist');
    expect((await call('DELETE', `/support/openapi/delete?id=${id}`, authHeaders(ownerB))).statusCode).toBe(404);
    const keyB = await createApiKey(t, ownerB, { name: 'b-key' });
    // B's key acts in team B only.
    const who = await call('GET', '/test/whoami', apiKeyHeaders(keyB));
    expect(who.json().data.teamId).not.toBe(teamA);
    // Key-management and team endpoints take sessions only: B's key is refused there too.
    expect((await call('DELETE', `/support/openapi/delete?id=${id}`, apiKeyHeaders(keyB))).statusCode).toBe(401);
    expect((await call('PUT', '/support/user/team/update', apiKeyHeaders(keyB), { name: 'by key' })).statusCode).toBe(401);
    expect((await listKeys(ownerA)).find((item) => item._id === id)?.name).toBe('guarded');
    expect((await call('GET', '/test/whoami', apiKeyHeaders(keyA))).statusCode).toBe(200);
  });

  it('applies member permissions and the per-member cap', async () => {
    await createUser(t, { username: 'reader-a', password: 'password-r', teamId: teamA, role: 'member' });
    await createUser(t, { username: 'writer-a', password: 'password-w', teamId: teamA, role: 'member', permission: 6 });
    const reader = await login(t, 'reader-a', 'password-r');
    const writer = await login(t, 'writer-a', 'password-w');
    const denied = await call('POST', '/support/openapi/create', authHeaders(reader), { name: 'nope' });
    expect(denied.statusCode).toBe(403);
    expect(denied.json().statusText).toBe('unAuthTeam');
    expect(await listKeys(reader)).toEqual([]);
    await createApiKey(t, writer, { name: 'writer-key' });
    expect((await listKeys(writer)).map((item) => item.name)).toEqual(['writer-key']);
    // The owner sees every global key of the team; the writer cannot touch the owner's keys.
    expect((await listKeys(ownerA)).length).toBeGreaterThan(1);
    const ownerKeyId = (await listKeys(ownerA)).find((item) => item.name === 'guarded')?._id as string;
    const touch = await call('PUT', '/support/openapi/update', authHeaders(writer), { _id: ownerKeyId, name: 'mine' });
    expect(touch.statusCode).toBe(403);
    expect(touch.json().statusText).toBe('openapiUnAuth');
    for (let i = 1; i < 10; i++) await createApiKey(t, writer, { name: `writer-${i}` });
    const eleventh = await call('POST', '/support/openapi/create', authHeaders(writer), { name: 'one too many' });
    expect(eleventh.json()).toMatchObject({ code: 506002, statusText: 'openapiExceedLimit' });
  });

  // The cap was a count, then an insert: 30 creates at once stored 19 keys.
  it('keeps the per-member cap under parallel creates', async () => {
    await createUser(t, { username: 'racer-a', password: 'password-p', teamId: teamA, role: 'member', permission: 6 });
    const racer = await login(t, 'racer-a', 'password-p');
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => call('POST', '/support/openapi/create', authHeaders(racer), { name: `race-${i}` })));
    expect(answers.filter((answer) => answer.statusCode === 200)).toHaveLength(10);
    for (const answer of answers.filter((answer) => answer.statusCode !== 200)) expect(answer.json().statusText).toBe('openapiExceedLimit');
    expect(await listKeys(racer)).toHaveLength(10);
  });

  it('binds keys to an app the caller manages, and refuses apps of other teams', async () => {
    const appId = new ObjectId();
    await t.app.mongo.db.collection('apps').insertOne({
      _id: appId,
      teamId: new ObjectId(teamA),
      tmbId: new ObjectId((await call('GET', '/test/whoami', authHeaders(ownerA))).json().data.tmbId),
      parentId: null,
      type: 'simple',
      name: 'app',
      defaultPermission: 0,
      inheritPermission: true,
    });
    const key = await createApiKey(t, ownerA, { name: 'app-key', appId: appId.toHexString() });
    expect((await call('GET', '/test/whoami', apiKeyHeaders(key))).json().data.appId).toBe(appId.toHexString());
    expect((await listKeys(ownerA, `?appId=${appId}`)).map((item) => item.name)).toEqual(['app-key']);
    expect((await listKeys(ownerA)).some((item) => item.name === 'app-key')).toBe(false);
    const foreign = await call('POST', '/support/openapi/create', authHeaders(ownerB), { name: 'x', appId: appId.toHexString() });
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json().statusText).toBe('unAuthApp');
    const missing = await call('POST', '/support/openapi/create', authHeaders(ownerA), { name: 'x', appId: new ObjectId().toHexString() });
    expect(missing.json().statusText).toBe('appUnExist');
    // Deleting the app deletes its keys (the apps module's cascade asks the keys' owner).
    expect((await call('DELETE', `/core/app/del?appId=${appId}`, authHeaders(ownerA))).json().code).toBe(200);
    expect(await t.app.mongo.db.collection('openapis').countDocuments({ appId: appId.toHexString() })).toBe(0);
    expect((await call('GET', '/test/whoami', apiKeyHeaders(key))).statusCode).toBe(401);
  });
});
