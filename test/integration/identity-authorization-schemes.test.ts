import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { apiKeyHeaders, authHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { createApp } from './apps-helpers.js';

/**
 * The web client behind a Basic-auth or SSO proxy sends the proxy's `Authorization` header next
 * to its session: only a Bearer header is an API key attempt, any other scheme is skipped.
 */
const BASIC = 'Basic dXNlcjpwYXNz';
/** Its second word has one dash, the shape of a key: it must not be looked up as one. */
const DIGEST = 'Digest username="proxy-user", realm="fastgpt", nonce="abc", response="def"';

let t: TestApp;
let tokA: string;
let tokB: string;
let tmbA: string;
let tmbB: string;
let appA: string;
let keyA: string;
let keyB: string;
let boundKeyA: string;

const request = (method: 'GET' | 'POST', url: string, headers: Record<string, string>, payload?: object) =>
  t.app.inject({ method, url: `/api${url}`, headers, ...(payload ? { payload } : {}) });
const chatInit = (headers: Record<string, string>) => request('GET', `/core/chat/init?appId=${appA}`, headers);
const datasetList = (headers: Record<string, string>) => request('POST', '/core/dataset/list', headers, {});
const whoami = (headers: Record<string, string>) => request('GET', '/test/whoami', headers);
const cookieOf = (token: string) => ({ cookie: `fastgpt_token=${token}` });

beforeAll(async () => {
  t = await buildTestApp({}, (app) => {
    app.register(
      async (api) => {
        api.get('/test/whoami', async (req) => ({ code: 200, data: await app.platformAuth.authenticate(req, ['session', 'apiKey', 'rootKey']) }));
      },
      { prefix: '/api' },
    );
  });
  tmbA = (await createUser(t, { username: 'scheme-a', password: 'password-a' })).tmbId;
  tmbB = (await createUser(t, { username: 'scheme-b', password: 'password-b' })).tmbId;
  tokA = await login(t, 'scheme-a', 'password-a');
  tokB = await login(t, 'scheme-b', 'password-b');
  appA = await createApp(t, tokA, { name: 'behind a proxy' });
  keyA = await createApiKey(t, tokA, { name: 'a-global' });
  keyB = await createApiKey(t, tokB, { name: 'b-global' });
  boundKeyA = await createApiKey(t, tokA, { name: 'a-bound', appId: appA });
});

afterAll(() => t.close());

describe('a non-Bearer Authorization header next to a session', () => {
  it.each([
    ['Basic, token header', (token: string) => ({ authorization: BASIC, ...authHeaders(token) })],
    ['Basic, session cookie', (token: string) => ({ authorization: BASIC, ...cookieOf(token) })],
    ['basic in lower case, both', (token: string) => ({ authorization: BASIC.toLowerCase(), ...authHeaders(token), ...cookieOf(token) })],
    ['Digest with a dashed user name, token header', (token: string) => ({ authorization: DIGEST, ...authHeaders(token) })],
  ])('authenticates as the session (%s) on routes that accept API keys', async (_name, headersOf) => {
    const headers = headersOf(tokA);
    const init = await chatInit(headers);
    expect(init.statusCode, init.body).toBe(200);
    expect(init.json().data.appId).toBe(appA);
    expect((await datasetList(headers)).statusCode).toBe(200);
  });

  it('resolves to the session itself (the probe reads the token header; cookies are parsed inside the platform only)', async () => {
    expect((await whoami({ authorization: BASIC, ...authHeaders(tokA) })).json().data).toMatchObject({ authType: 'token', tmbId: tmbA });
    expect((await whoami({ authorization: DIGEST, ...authHeaders(tokA) })).json().data).toMatchObject({ authType: 'token', tmbId: tmbA });
  });

  it('is that session and no more: B with a Basic header is still refused A\'s app', async () => {
    expect((await whoami({ authorization: BASIC, ...authHeaders(tokB) })).json().data).toMatchObject({ authType: 'token', tmbId: tmbB });
    const init = await chatInit({ authorization: BASIC, ...authHeaders(tokB) });
    expect(init.statusCode).toBe(403);
  });

  it('still needs a valid credential: alone or with a bad session it is a clear 401', async () => {
    const alone = await chatInit({ authorization: BASIC });
    expect(alone.statusCode).toBe(401);
    expect(alone.json()).toMatchObject({ statusText: 'unAuthorization' });
    expect(alone.json().message).toContain('Missing credentials');
    expect(alone.json().message).toContain("'Bearer <API key>'");
    const badSession = await chatInit({ authorization: BASIC, ...authHeaders(`${tokA}x`) });
    expect(badSession.statusCode).toBe(401);
    expect(badSession.json().message).toContain('session token is invalid');
  });

  it('leaves the other kinds in their order: a root key next to a Basic header is the root key', async () => {
    const root = await whoami({ authorization: BASIC, rootkey: t.config.ROOT_KEY });
    expect(root.json().data).toMatchObject({ authType: 'root', isRoot: true });
    expect((await whoami({ authorization: BASIC, rootkey: 'not-the-root-key' })).statusCode).toBe(401);
  });
});

describe('a Bearer Authorization header is always the credential (no fallback to the session)', () => {
  it.each([
    ['an unknown key', 'Bearer fastgpt-notakeyatall', 514],
    ['an unknown key, lower-case scheme', 'bearer fastgpt-notakeyatall', 514],
    ['a value of no key shape (a key that does not exist)', 'Bearer a-b-c-d', 514],
    ['no key at all', 'Bearer', 403],
    // A JWT may or may not hold a dash (malformed or unknown key): either way a 401.
    ['a session token sent as a key', 'Bearer SESSION', null],
  ])('refuses %s with a valid session beside it', async (_name, authorization, code) => {
    const headers = { authorization: authorization.replace('SESSION', tokA), ...authHeaders(tokA), ...cookieOf(tokA) };
    for (const response of [await chatInit(headers), await datasetList(headers), await whoami(headers)]) {
      expect(response.statusCode).toBe(401);
      if (code !== null) expect(response.json().code).toBe(code);
    }
  });

  it("acts as the key, not as another user's session beside it", async () => {
    const asB = await whoami({ ...apiKeyHeaders(keyB), ...authHeaders(tokA) });
    expect(asB.json().data).toMatchObject({ authType: 'apikey', tmbId: tmbB });
    expect((await chatInit({ ...apiKeyHeaders(keyB), ...authHeaders(tokA) })).statusCode).toBe(403);
    const asA = await chatInit({ authorization: `BEARER ${keyA}`, ...authHeaders(tokB) });
    expect(asA.statusCode, asA.body).toBe(200);
  });

  it('keeps the app-bound key rule: a bound key is refused off its chat routes, whatever session is beside it', async () => {
    expect((await chatInit({ ...apiKeyHeaders(boundKeyA), ...authHeaders(tokB) })).statusCode).toBe(200);
    const list = await datasetList({ ...apiKeyHeaders(boundKeyA), ...authHeaders(tokA) });
    expect(list.statusCode).toBe(403);
    expect(list.json().statusText).toBe('openapiUnAuth');
  });
});
