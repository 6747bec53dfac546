import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { createUser, login } from '../helpers/platform.js';
import { answerOnlyGraph, createPublishedApp, startChatApp } from './chat-helpers.js';

/**
 * TEAM_TOKEN_AUTH_URL is the operator's own (often internal) service: it is reached on a loopback
 * address with SSRF_ALLOW_PRIVATE off, never through a redirect, and any failure of it is a 401
 * that does not tell the visitor where the checker lives.
 */
type Mode = 'approve' | 'refuse' | 'status500' | 'html' | 'redirect' | 'drop';
let mode: Mode = 'approve';
let redirectTargetHits = 0;
let checker: Server;
let checkerPort = 0;
let t: TestApp;
let fake: FakeOpenAi;
let teamId: string;
let appId: string;

function answer(req: IncomingMessage, res: ServerResponse): void {
  const json = (status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (req.url === '/elsewhere') {
    redirectTargetHits++;
    json(200, { success: true, data: { uid: 'redirected-user' } });
  } else if (mode === 'approve') json(200, { success: true, data: { uid: 'team-user-1' } });
  else if (mode === 'refuse') json(200, { success: false, message: 'bad team token' });
  else if (mode === 'status500') json(500, { success: true, data: { uid: 'team-user-1' } });
  else if (mode === 'html') {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<html>gateway</html>');
  } else if (mode === 'redirect') {
    res.writeHead(307, { location: `http://127.0.0.1:${checkerPort}/elsewhere` });
    res.end();
  } else req.socket.destroy();
}

beforeAll(async () => {
  checker = createServer((req, res) => {
    req.resume();
    req.on('end', () => answer(req, res));
  });
  await new Promise<void>((resolve) => checker.listen(0, '127.0.0.1', resolve));
  checkerPort = (checker.address() as AddressInfo).port;
  // The default SSRF setting: user-chosen URLs may not reach private addresses.
  ({ t, fake } = await startChatApp(() => ({ TEAM_TOKEN_AUTH_URL: `http://127.0.0.1:${checkerPort}/check`, SSRF_ALLOW_PRIVATE: 'false' })));
  const owner = await createUser(t, { username: 'ts-owner', password: 'password-o1' });
  teamId = owner.teamId;
  appId = await createPublishedApp(t, await login(t, 'ts-owner', 'password-o1'), 'Team bot', answerOnlyGraph);
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
  await new Promise((resolve) => checker?.close(resolve));
});

const teamInit = () => t.app.inject({ method: 'GET', url: `/api/core/chat/team/init?teamId=${teamId}&appId=${appId}&teamToken=some-team-token` });

describe('the team-token checker on a private address, SSRF_ALLOW_PRIVATE off', () => {
  it('is reached: an approved token opens the team space', async () => {
    mode = 'approve';
    const init = await teamInit();
    expect(init.statusCode, init.body).toBe(200);
    expect(init.json().data.app.name).toBe('Team bot');
  });

  it("passes on the checker's own refusal", async () => {
    mode = 'refuse';
    const refused = await teamInit();
    expect(refused.statusCode).toBe(401);
    expect(refused.json()).toMatchObject({ statusText: 'unAuthTeam', message: 'bad team token' });
  });

  it.each(['status500', 'html', 'drop'] as const)('refuses with 401 and keeps the address to itself when the checker fails (%s)', async (failure) => {
    mode = failure;
    const refused = await teamInit();
    expect(refused.statusCode).toBe(401);
    expect(refused.json()).toMatchObject({ statusText: 'unAuthTeam', message: 'The team token could not be checked' });
    expect(refused.body).not.toContain('127.0.0.1');
    expect(refused.body).not.toContain(String(checkerPort));
  });

  it('does not follow a redirect: the token never reaches another address', async () => {
    mode = 'redirect';
    const refused = await teamInit();
    expect(refused.statusCode).toBe(401);
    expect(refused.json()).toMatchObject({ statusText: 'unAuthTeam', message: 'The team token could not be checked' });
    expect(refused.body).not.toContain('127.0.0.1');
    expect(redirectTargetHits).toBe(0);
    expect(t.logs()).toContain('team-token checker');
  });
});
