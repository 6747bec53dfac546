import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BASE64_CHARS } from '../../src/platform/datasets/files/file.service.js';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { answerOnlyGraph, createPublishedApp, startChatApp } from './chat-helpers.js';

/** An image part's URL is stored with the chat and shown again by init: only text, and bounded. */
let t: TestApp;
let fake: FakeOpenAi;
let tok: string;
let appId: string;

/** The uploadImage cap on a data URI, which an image URL follows. */
const MAX_IMAGE_URL_CHARS = MAX_BASE64_CHARS;

const completions = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(tok), payload });
const withImage = (chatId: string, url: unknown) => ({ appId, chatId, messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url } }] }] });
const storedItems = (chatId: string) => t.app.mongo.db.collection('chatitems').countDocuments({ chatId });

beforeAll(async () => {
  // A body large enough to carry the longest image URL accepted, and one character more.
  ({ t, fake } = await startChatApp(() => ({ BODY_LIMIT_BYTES: String(MAX_IMAGE_URL_CHARS + 64 * 1024) })));
  await createUser(t, { username: 'imager', password: 'password-im1' });
  tok = await login(t, 'imager', 'password-im1');
  appId = await createPublishedApp(t, tok, 'Answer bot', answerOnlyGraph);
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('image_url parts of a chat message', () => {
  it.each([
    ['an object', { a: 1 }],
    ['a number', 5],
    ['a boolean', true],
    ['an array', [1, 2]],
    ['an operator object', { $gt: '' }],
  ])('a URL that is %s is a 400 naming the field, and nothing is stored', async (_label, url) => {
    const chatId = `bad-${_label.replace(/\W/g, '')}`;
    const answer = await completions(withImage(chatId, url));
    expect(answer.statusCode, answer.body).toBe(400);
    expect(answer.json().message).toContain("'messages.0.content.1.image_url.url'");
    expect(await storedItems(chatId)).toBe(0);
  });

  it('a URL longer than uploadImage takes is a 400 naming the field', async () => {
    const answer = await completions(withImage('too-long', `data:image/png;base64,${'A'.repeat(MAX_IMAGE_URL_CHARS)}`));
    expect(answer.statusCode).toBe(400);
    expect(answer.json().message).toContain("'messages.0.content.1.image_url.url'");
    expect(await storedItems('too-long')).toBe(0);
  });

  it('a text URL is stored and init shows it', async () => {
    const url = 'https://example.com/cat.png';
    const answer = await completions(withImage('good', url));
    expect(answer.statusCode, answer.body).toBe(200);
    const init = await t.app.inject({ method: 'GET', url: `/api/core/chat/init?appId=${appId}&chatId=good`, headers: authHeaders(tok) });
    expect(init.json().data.history[0].value).toEqual([
      { type: 'text', text: { content: 'look' } },
      { type: 'file', file: { type: 'image', name: '', url } },
    ]);
  });

  it('chatTest checks its messages the same way', async () => {
    const answer = await t.app.inject({
      method: 'POST',
      url: '/api/core/chat/chatTest',
      headers: authHeaders(tok),
      payload: { appId, nodes: answerOnlyGraph.nodes, edges: answerOnlyGraph.edges, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 7 } }] }] },
    });
    expect(answer.statusCode).toBe(400);
    expect(answer.json().message).toContain("'messages.0.content.0.image_url.url'");
  });
});
