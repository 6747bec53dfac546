import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import type { TeamRole } from '../../src/platform/auth/types.js';
import type { TestApp } from './app.js';

export interface CreatedUser {
  userId: string;
  teamId: string;
  tmbId: string;
}

/**
 * Creates a user through the same service the admin CLI uses: with its own team, or (with
 * `teamId`) as a member of an existing team, which becomes its default team.
 */
export async function createUser(
  t: TestApp,
  input: { username: string; password: string; teamId?: string; role?: TeamRole; permission?: number },
): Promise<CreatedUser> {
  return t.app.identity.accounts.createUser(input);
}

/** Adds an existing user to a team (as `team add-member` does); returns the new tmbId. */
export async function addMember(t: TestApp, input: { teamId: string; username: string; role: TeamRole; permission?: number }): Promise<string> {
  return (await t.app.identity.accounts.addMember(input)).tmbId;
}

/** Logs in through the real login route; returns the session token. */
export async function login(t: TestApp, username: string, password: string): Promise<string> {
  const response = await t.app.inject({ method: 'POST', url: '/api/support/user/account/loginByPassword', payload: { username, password } });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data.token as string;
}

/** Headers that authenticate a request with a session token. */
export function authHeaders(token: string): { token: string } {
  return { token };
}

/** Creates an API key through the real route; returns the full key (shown once). */
export async function createApiKey(t: TestApp, token: string, body: { name?: string; appId?: string; limit?: { expiredTime?: string; maxUsagePoints?: number } } = {}): Promise<string> {
  const response = await t.app.inject({ method: 'POST', url: '/api/support/openapi/create', headers: authHeaders(token), payload: { name: 'test key', ...body } });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data as string;
}

/** Headers that authenticate a request with an API key. */
export function apiKeyHeaders(key: string): { authorization: string } {
  return { authorization: `Bearer ${key}` };
}

/**
 * Adds GET /api/test/whoami to an app (pass to buildTestApp): it answers whom a session token or
 * API key resolves to, authentication only, so tests can watch credential caches on their own.
 */
export const whoamiProbe = (app: FastifyInstance) => {
  app.register(
    async (api) => {
      api.get('/test/whoami', async (request) => ({ code: 200, data: await app.platformAuth.authenticate(request, ['session', 'apiKey']) }));
    },
    { prefix: '/api' },
  );
};

/** Calls the probe of `whoamiProbe`. */
export const whoami = (t: TestApp, headers: Record<string, string>) => t.app.inject({ method: 'GET', url: '/api/test/whoami', headers });

/** Resolves the credential through the probe on every app, so each holds it in its cache. */
export async function warmOn(apps: TestApp[], headers: Record<string, string>): Promise<void> {
  for (const t of apps) expect((await whoami(t, headers)).statusCode).toBe(200);
}
