import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { describeZodError } from '../../src/infra/error-render.js';
import { Errors } from '../../src/infra/errors.js';
import { zBoolLike, zIntLike, zObjectId } from '../../src/infra/zod.js';
import type { AuthContext, PlatformAuthenticator } from '../../src/platform/auth/types.js';
import { definePlatformRoute } from '../../src/platform/define-route.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { login } from '../helpers/platform.js';

/**
 * Route input is validated by Fastify (the zod validator compiler of fastify-type-provider-zod)
 * before the handler runs, on the merged query, path and body, once per request; failures keep
 * the envelopes and field names of a handler-side zod parse, and authentication comes first.
 * Probe routes are declared with the real definePlatformRoute on the real app.
 */
let t: TestApp;
let token: string;
let validations = 0;
let handled = 0;

const ID = '0123456789abcdef01234567';
const PROBE_SESSION = 'probe-session';
const probeInput = z.object({
  id: zObjectId,
  count: zIntLike,
  flag: zBoolLike.optional(),
  note: z
    .string()
    .max(20)
    .transform((note) => {
      validations++;
      return note;
    }),
});

function registerProbes(app: FastifyInstance): void {
  app.register(
    async (scope) => {
      // The platform authenticator lives inside the /api module; the probes get a stand-in that
      // accepts one session token (the real one is exercised through the app list below).
      const authenticator: Pick<PlatformAuthenticator, 'authenticate'> = {
        authenticate: async (request) => {
          if (request.headers.token !== PROBE_SESSION) throw Errors.unAuthorization();
          return { authType: 'token', userId: ID, teamId: ID, tmbId: ID, role: 'owner', teamPermission: 7, isRoot: false } satisfies AuthContext;
        },
      };
      scope.decorate('platformAuth', authenticator as PlatformAuthenticator);
      for (const url of ['/zz-probe/echo', '/zz-probe/echo/:id']) {
        definePlatformRoute(scope, {
          methods: ['POST', 'GET', 'DELETE', 'PUT'],
          url,
          auth: ['session'],
          input: probeInput,
          summary: 'probe',
          tags: ['zz-probe'],
          handler: async ({ input }) => {
            handled++;
            return input;
          },
        });
      }
    },
    { prefix: '/api' },
  );
  // The cluster API's error bodies: a zod-validated route under /kapis and under /oauth.
  for (const prefix of ['/kapis', '/oauth']) {
    app.get(`${prefix}/zz-probe`, { schema: { querystring: z.object({ limit: zIntLike }) } }, async (request) => request.query);
  }
}

beforeAll(async () => {
  t = await buildTestApp({}, registerProbes);
  token = await login(t, 'root', 'root-password-1');
});

afterAll(async () => {
  await t.close();
});

beforeEach(() => {
  validations = 0;
  handled = 0;
});

const query = (values: Record<string, string>) => `?${new URLSearchParams(values)}`;

describe('platform route input', () => {
  it('reads GET parameters from the query string, coerced by the schema, validated once', async () => {
    const response = await t.app.inject({ method: 'GET', url: `/api/zz-probe/echo${query({ id: ID, count: '12', flag: '1', note: 'hi' })}`, headers: { token: PROBE_SESSION } });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({ code: 200, statusText: '', message: '', data: { id: ID, count: 12, flag: true, note: 'hi' } });
    expect(validations).toBe(1);
  });

  it('merges query, path and body for every method, the body winning', async () => {
    for (const method of ['POST', 'PUT', 'DELETE'] as const) {
      const response = await t.app.inject({
        method,
        url: `/api/zz-probe/echo/${ID}${query({ count: '1', note: 'from query' })}`,
        headers: { token: PROBE_SESSION },
        payload: { count: 7, note: 'from body' },
      });
      expect(response.statusCode, `${method}: ${response.body}`).toBe(200);
      expect(response.json().data, method).toEqual({ id: ID, count: 7, note: 'from body' });
    }
    expect(validations).toBe(3);
  });

  it('refuses bad input with 400 missingParams naming the field, as a zod parse in the handler did, and never runs the handler', async () => {
    const cases: { method: 'GET' | 'POST'; url: string; payload?: Record<string, unknown>; merged: Record<string, unknown> }[] = [
      { method: 'GET', url: `/api/zz-probe/echo${query({ id: ID, count: 'twelve', note: 'x' })}`, merged: { id: ID, count: 'twelve', note: 'x' } },
      { method: 'POST', url: '/api/zz-probe/echo', payload: { id: 'not-an-id', count: 1, note: 'x' }, merged: { id: 'not-an-id', count: 1, note: 'x' } },
      { method: 'POST', url: `/api/zz-probe/echo/${ID}`, payload: { count: 1, note: 'x'.repeat(21) }, merged: { id: ID, count: 1, note: 'x'.repeat(21) } },
      { method: 'POST', url: '/api/zz-probe/echo', payload: {}, merged: {} },
    ];
    for (const { method, url, payload, merged } of cases) {
      const response = await t.app.inject({ method, url, headers: { token: PROBE_SESSION }, ...(payload ? { payload } : {}) });
      const expected = describeZodError(probeInput.safeParse(merged).error!);
      expect(expected).toMatch(/^Invalid field '\w+': /);
      expect(response.statusCode, response.body).toBe(400);
      expect(response.json()).toEqual({ code: 507002, statusText: 'missingParams', message: expected, data: null });
    }
    expect(handled).toBe(0);
  });

  it('authenticates before validating: bad input without credentials is a 401', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/api/zz-probe/echo', payload: { id: 'not-an-id', count: 'x' } });
    expect(response.statusCode, response.body).toBe(401);
    expect(response.json()).toMatchObject({ statusText: 'unAuthorization' });
    expect(validations + handled).toBe(0);
  });

  it('keeps the NUL guard ahead of validation', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/api/zz-probe/echo', headers: { token: PROBE_SESSION }, payload: { id: ID, count: 1, note: 'a\u0000b' } });
    expect(response.statusCode).toBe(400);
    expect(response.json().message).toBe("Invalid field 'note': must not contain the NUL character (U+0000)");
    expect(validations).toBe(0);
  });

  it('validates real routes the same way (app list: POST body and GET query)', async () => {
    const post = await t.app.inject({ method: 'POST', url: '/api/core/app/list', headers: { token }, payload: { parentId: 'nope' } });
    expect(post.statusCode).toBe(400);
    expect(post.json()).toMatchObject({ code: 507002, statusText: 'missingParams' });
    expect(post.json().message).toMatch(/^Invalid field 'parentId': /);
    const get = await t.app.inject({ method: 'GET', url: '/api/core/app/list?getRecentlyChat=maybe', headers: { token } });
    expect(get.statusCode).toBe(400);
    expect(get.json().message).toMatch(/^Invalid field 'getRecentlyChat': /);
    const anonymous = await t.app.inject({ method: 'POST', url: '/api/core/app/list', payload: { parentId: 'nope' } });
    expect(anonymous.statusCode).toBe(401);
  });

  it('reads optional list filters sent as null as absent (app list, system plugins, input guide list)', async () => {
    const plain = await t.app.inject({ method: 'POST', url: '/api/core/app/list', headers: { token }, payload: {} });
    const nulls = await t.app.inject({ method: 'POST', url: '/api/core/app/list', headers: { token }, payload: { type: null, searchKey: null, getRecentlyChat: null } });
    expect(nulls.statusCode).toBe(200);
    expect(nulls.json().data).toEqual(plain.json().data);
    const plugins = await t.app.inject({ method: 'POST', url: '/api/core/app/plugin/getSystemPluginTemplates', headers: { token }, payload: { searchKey: null } });
    expect(plugins.statusCode).toBe(200);
    expect(plugins.json().data.length).toBeGreaterThan(0);
    const appId = await t.app.inject({ method: 'POST', url: '/api/core/app/create', headers: { token }, payload: { name: 'guides', type: 'simple', modules: [], edges: [] } });
    expect(appId.statusCode).toBe(200);
    const guides = await t.app.inject({ method: 'POST', url: '/api/core/chat/inputGuide/list', headers: { token }, payload: { appId: appId.json().data, searchKey: null } });
    expect(guides.statusCode).toBe(200);
    expect(guides.json().data).toMatchObject({ total: 0 });
  });

  it('reads any optional field sent as null as absent, keeps a null the schema gives a meaning, and refuses a required one by name', async () => {
    const created = await t.app.inject({ method: 'POST', url: '/api/core/dataset/create', headers: { token }, payload: { name: 'nulls', intro: null, avatar: null, vectorModel: null, parentId: null } });
    expect(created.statusCode, created.body).toBe(200);
    const detail = await t.app.inject({ method: 'GET', url: `/api/core/dataset/detail?id=${created.json().data}`, headers: { token } });
    expect(detail.json().data).toMatchObject({ name: 'nulls', parentId: null });
    const required = await t.app.inject({ method: 'POST', url: '/api/core/dataset/create', headers: { token }, payload: { name: null, intro: null } });
    expect(required.statusCode).toBe(400);
    expect(required.json().message).toMatch(/^Invalid field 'name': /);
    const nested = await t.app.inject({ method: 'POST', url: '/api/core/dataset/create', headers: { token }, payload: { name: 'x', intro: 5, avatar: null } });
    expect(nested.statusCode).toBe(400);
    expect(nested.json().message).toMatch(/^Invalid field 'intro': /);
  });
});

describe('validation errors of the cluster API', () => {
  it('are a Kubernetes Status under /kapis and OAuth JSON under /oauth', async () => {
    const kapis = await t.app.inject({ method: 'GET', url: '/kapis/zz-probe?limit=many' });
    expect(kapis.statusCode).toBe(400);
    expect(kapis.json()).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'BadRequest', code: 400 });
    expect(kapis.json().message).toMatch(/^Invalid field 'limit': /);
    const oauth = await t.app.inject({ method: 'GET', url: '/oauth/zz-probe?limit=many' });
    expect(oauth.statusCode).toBe(400);
    expect(oauth.json()).toEqual({ error: 'invalid_request', error_description: kapis.json().message });
  });

  it('lets an anonymous node list through to its 403 whatever the query, and an empty token form to the grant check', async () => {
    const anonymous = await t.app.inject({ method: 'GET', url: '/kapis/resources.platform.io/v1alpha3/nodes?limit=a&limit=b' });
    expect(anonymous.statusCode).toBe(403);
    expect(anonymous.json()).toMatchObject({ kind: 'Status', reason: 'Forbidden' });
    const noBody = await t.app.inject({ method: 'POST', url: '/oauth/token' });
    const emptyForm = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: '' });
    expect(noBody.statusCode).toBe(emptyForm.statusCode);
    expect(noBody.json()).toEqual(emptyForm.json());
    expect(noBody.json().error).not.toBe('server_error');
  });
});
