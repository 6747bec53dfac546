/**
 * Share-link QPM counted in MongoDB (issue 13 point 2): two server instances on one database
 * share each link's per-minute count, sequentially and under concurrent starts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp } from './chat-helpers.js';

let first: TestApp;
let second: TestApp;
let tok: string;
let appId: string;

const answerGraph = {
  nodes: [
    { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userChatInput', key: 'userChatInput', valueType: 'string' }] },
    { nodeId: 'say', flowNodeType: 'answerNode', name: 'Say', inputs: [{ key: 'text', value: 'shared answer' }], outputs: [] },
  ],
  edges: [{ source: 'start', sourceHandle: 'start-source-right', target: 'say', targetHandle: 'say-target-left' }],
  chatConfig: {},
};

const chatVia = (target: TestApp, shareId: string, uid: string) =>
  target.app.inject({ method: 'POST', url: '/api/v1/chat/completions', payload: { shareId, outLinkUid: uid, messages: [{ role: 'user', content: 'hi' }] } });

// Both instances count in the same clock minute, whenever the test runs.
const frozenMinute = Math.floor(Date.now() / 60_000) * 60_000 + 1_000;

beforeAll(async () => {
  first = await buildTestApp();
  second = await buildReplica(first);
  for (const instance of [first, second]) instance.app.identity.clock.now = () => frozenMinute;
  await createUser(first, { username: 'owner', password: 'password-o1' });
  tok = await login(first, 'owner', 'password-o1');
  appId = await createPublishedApp(first, tok, 'Shared bot', answerGraph);
});

afterAll(async () => {
  await second?.close();
  await first?.close();
});

describe('share-link QPM across instances', () => {
  it('N starts spread over both instances pass; the next one, on either, is refused 429', async () => {
    const shareId = await ok(first, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Limited', limit: { QPM: 3 } });
    for (const [index, target] of [first, second, first].entries()) {
      const res = await chatVia(target, shareId, `user-${index}`);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().choices[0].message.content.trim()).toBe('shared answer');
    }
    for (const target of [second, first]) {
      const refused = await chatVia(target, shareId, 'user-late');
      expect(refused.statusCode).toBe(429);
      expect(refused.json()).toMatchObject({ code: 429, statusText: 'tooManyRequest', message: 'The share link allows 3 requests per minute' });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    }
    // The next minute starts a new count.
    for (const instance of [first, second]) instance.app.identity.clock.now = () => frozenMinute + 60_000;
    expect((await chatVia(second, shareId, 'user-next')).statusCode).toBe(200);
    for (const instance of [first, second]) instance.app.identity.clock.now = () => frozenMinute;
  });

  it('concurrent starts on both instances: exactly QPM of them pass', async () => {
    const shareId = await ok(first, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Busy', limit: { QPM: 4 } });
    const results = await Promise.all(Array.from({ length: 10 }, (_, index) => chatVia(index % 2 ? second : first, shareId, `burst-${index}`)));
    const statuses = results.map((res) => res.statusCode).sort();
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429, 429, 429, 429, 429]);
  });

  it("a request refused before the chat starts (no messages, another visitor's chat) takes no slot", async () => {
    const shareId = await ok(first, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Careful', limit: { QPM: 1 } });
    const empty = await first.app.inject({ method: 'POST', url: '/api/v1/chat/completions', payload: { shareId, outLinkUid: 'u1', messages: [] } });
    expect(empty.statusCode).toBe(400);
    const owned = await first.app.inject({ method: 'POST', url: '/api/v1/chat/completions', payload: { shareId, outLinkUid: 'owner', chatId: 'careful-chat', messages: [{ role: 'user', content: 'hi' }] } });
    expect(owned.statusCode, owned.body).toBe(200);
    // The owner's turn took the one slot of this minute: move to the next minute, then try someone else's chat.
    for (const instance of [first, second]) instance.app.identity.clock.now = () => frozenMinute + 120_000;
    const foreign = await second.app.inject({ method: 'POST', url: '/api/v1/chat/completions', payload: { shareId, outLinkUid: 'intruder', chatId: 'careful-chat', messages: [{ role: 'user', content: 'hi' }] } });
    expect(foreign.statusCode).toBe(403);
    expect((await chatVia(first, shareId, 'u2')).statusCode).toBe(200);
    for (const instance of [first, second]) instance.app.identity.clock.now = () => frozenMinute;
  });

  it('links are counted apart', async () => {
    const one = await ok(first, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'One', limit: { QPM: 1 } });
    const two = await ok(first, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Two', limit: { QPM: 1 } });
    expect((await chatVia(first, one, 'u')).statusCode).toBe(200);
    expect((await chatVia(second, two, 'u')).statusCode).toBe(200);
    expect((await chatVia(second, one, 'u')).statusCode).toBe(429);
  });
});
