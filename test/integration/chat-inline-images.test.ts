/**
 * Photos sent inline (data: URLs in image_url parts) to v1/chat/completions: a caller whose
 * headers prove an API key or a session may send bodies up to API_BODY_LIMIT_BYTES;
 * anyone else keeps BODY_LIMIT_BYTES, refused before the rest of the body is read. In a stored
 * chat the image is kept as a chat file, the chat item names its link, and the model gets the
 * image back as a data URL in this turn and in later ones.
 */
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, authHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let origin: string;
let tok: string;
let key: string;
let appId: string;
let shareId: string;

/** The default JSON body limit, which callers not proven by their headers keep. */
const DEFAULT_LIMIT = 1024 * 1024;
const MB = 1024 * 1024;

/** A JPEG of `bytes` bytes as far as any sniffer can tell (its signature, then zeros). */
const jpeg = (bytes: number) => Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(bytes - 4)]);
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
const dataUrl = (mime: string, bytes: Buffer) => `data:${mime};base64,${bytes.toString('base64')}`;
const PHOTO = dataUrl('image/jpeg', jpeg(3 * MB));

/** The vision switch on: the model sees the question's (and history's) images. */
const visionGraph = {
  ...simpleChatGraph,
  nodes: simpleChatGraph.nodes.map((node) => (node.nodeId === 'ai' ? { ...node, inputs: [...node.inputs, { key: 'aiChatVision', value: true }] } : node)),
};

const question = (text: string, image?: unknown) => ({ role: 'user', content: image === undefined ? text : [{ type: 'text', text }, { type: 'image_url', image_url: image }] });
const completions = (headers: Record<string, string>, payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers, payload });
const modelCalls = () => fake.requests.filter((r) => r.path === '/v1/chat/completions');
/** The image URLs of each message of the last model call. */
const lastCallImages = () =>
  (modelCalls().at(-1)!.body as { messages: { role: string; content: unknown }[] }).messages.map((m) =>
    Array.isArray(m.content) ? (m.content as { type: string; image_url?: { url: string } }[]).filter((p) => p.type === 'image_url').map((p) => p.image_url!.url) : [],
  );
const chatFiles = (chatId: string) => t.app.mongo.db.collection('chat.files').find({ chatId }).toArray();
const humanItems = (chatId: string) => t.app.mongo.db.collection('chatitems').find({ chatId, obj: 'Human' }).sort({ _id: 1 }).toArray();

/**
 * A completions request over a real connection whose body is sent only in part (`sent` bytes of
 * `declared`; chunked when `declared` is undefined) and never finished: resolves with the answer,
 * which therefore came before the server had the whole body; `connection: close` says the server
 * reads no more of it either (else Node reads the rest to keep the connection).
 */
function partialRequest(headers: Record<string, string>, sent: number, declared?: number): Promise<{ status: number; body: string; connection?: string }> {
  const framing: Record<string, string> = declared === undefined ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(declared) };
  const request = httpRequest(`${origin}/api/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...framing, ...headers } });
  const answer = new Promise<{ status: number; body: string; connection?: string }>((resolve, reject) => {
    request.on('response', (response) => {
      let body = '';
      response.on('data', (chunk) => {
        body += chunk;
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body, connection: response.headers.connection }));
    });
    request.on('error', reject);
  });
  const head = `{"appId":"${appId}","chatId":"partial","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,`;
  request.write(head);
  // The rest of the part sent, in pieces (64 KiB each), and nothing after it: the request stays open.
  for (let left = sent - head.length; left > 0; left -= 64 * 1024) request.write('A'.repeat(Math.min(left, 64 * 1024)));
  return answer.finally(() => request.destroy());
}

beforeAll(async () => {
  ({ t, fake } = await startChatApp(() => ({ REQUEST_TIMEOUT_MS: '45000' })));
  // The model's answer must not echo a 4 MB question back into the stored answer.
  fake.reply = () => 'a photo';
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  await createUser(t, { username: 'photographer', password: 'password-ph1' });
  tok = await login(t, 'photographer', 'password-ph1');
  appId = await createPublishedApp(t, tok, 'Vision bot', visionGraph);
  key = await createApiKey(t, tok);
  shareId = await ok(t, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Photos' });
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('a photo sent inline to chat completions', () => {
  it('with an API key: 200, the stored item names a chat file, and this turn and the next send the model the image', async () => {
    const answer = await completions(apiKeyHeaders(key), { appId, chatId: 'photo', messages: [question('what is this?', { url: PHOTO })] });
    expect(answer.statusCode, answer.body.slice(0, 500)).toBe(200);
    expect(lastCallImages().at(-1)).toEqual([PHOTO]);

    const [item] = await humanItems('photo');
    const file = item!.value.find((value: { type: string }) => value.type === 'file');
    expect(file.file.type).toBe('image');
    expect(file.file.url).toMatch(/^\/api\/common\/file\/read\?filename=image-1\.jpg&token=/);
    expect(JSON.stringify(item)).not.toContain('base64');
    const files = await chatFiles('photo');
    expect(files.map((f) => [f.length, f.metadata.contentType])).toEqual([[3 * MB, 'image/jpeg']]);
    // The link reads the photo back.
    const read = await t.app.inject({ method: 'GET', url: file.file.url });
    expect(read.statusCode).toBe(200);
    expect(read.rawPayload.equals(jpeg(3 * MB))).toBe(true);

    const next = await completions(apiKeyHeaders(key), { appId, chatId: 'photo', messages: [question('and its colour?')] });
    expect(next.statusCode, next.body).toBe(200);
    // The earlier question (history) carries its image again; the new one has none.
    const images = lastCallImages();
    expect(images.flat()).toEqual([PHOTO]);
    expect(images.at(-1)).toEqual([]);
  });

  it('with a session token, as a bare string image_url: stored as a file the same way', async () => {
    const answer = await completions(authHeaders(tok), { appId, chatId: 'session-photo', messages: [question('look', PHOTO)] });
    expect(answer.statusCode, answer.body.slice(0, 500)).toBe(200);
    expect(lastCallImages().at(-1)).toEqual([PHOTO]);
    const [item] = await humanItems('session-photo');
    expect(JSON.stringify(item)).not.toContain('base64');
    expect(await chatFiles('session-photo')).toHaveLength(1);
  });

  it('without a chat id nothing is stored and the model gets the data URL as sent', async () => {
    const before = await t.app.mongo.db.collection('chat.files').countDocuments();
    const answer = await completions(apiKeyHeaders(key), { appId, messages: [question('stateless', { url: PHOTO })] });
    expect(answer.statusCode, answer.body.slice(0, 500)).toBe(200);
    expect(lastCallImages().at(-1)).toEqual([PHOTO]);
    expect(await t.app.mongo.db.collection('chat.files').countDocuments()).toBe(before);
  });

  it('a stored question keeps the default limit besides its inline images; without a chat id the large text is asked', async () => {
    const long = 'x'.repeat(DEFAULT_LIMIT + 1024);
    const stored = await completions(apiKeyHeaders(key), { appId, chatId: 'long-text', messages: [question(long, { url: PHOTO })] });
    expect(stored.statusCode, stored.body.slice(0, 500)).toBe(413);
    expect(stored.json().message).toContain('too large to keep in a chat');
    expect(await humanItems('long-text')).toHaveLength(0);
    expect(await chatFiles('long-text')).toHaveLength(0);
    const asked = await completions(apiKeyHeaders(key), { appId, messages: [question(long)] });
    expect(asked.statusCode, asked.body.slice(0, 500)).toBe(200);
  });

  it("a share visitor's small inline image is stored as a visitor's chat file", async () => {
    const small = dataUrl('image/png', PNG);
    const answer = await completions({}, { shareId, outLinkUid: 'visitor-1', chatId: 'visitor-photo', messages: [question('mine', { url: small })] });
    expect(answer.statusCode, answer.body).toBe(200);
    const [file] = await chatFiles('visitor-photo');
    expect(file?.metadata.uploadedBy).toBe('outLink');
    expect(lastCallImages().at(-1)).toEqual([small]);
  });
});

describe('who may send the larger body', () => {
  it('no credential: 413 before the rest of a declared body is read, and nothing stored', async () => {
    const answer = await partialRequest({}, 64 * 1024, 4 * MB);
    expect(answer.status, answer.body).toBe(413);
    expect(answer.connection).toBe('close');
    expect(JSON.parse(answer.body).message).toBe('Request body is too large');
    expect(await chatFiles('partial')).toHaveLength(0);
  });

  it('no credential, chunked: 413 once the default limit is passed, before the body ends', async () => {
    const answer = await partialRequest({}, DEFAULT_LIMIT + 256 * 1024);
    expect(answer.status, answer.body).toBe(413);
    expect(answer.connection).toBe('close');
  });

  it('a wrong API key: 413 before a large body is read; 401 with a small one', async () => {
    const wrong = apiKeyHeaders('fastgpt-notakeyatall');
    const large = await partialRequest(wrong, 64 * 1024, 4 * MB);
    expect(large.status, large.body).toBe(413);
    expect(large.connection).toBe('close');
    const chunked = await partialRequest(wrong, DEFAULT_LIMIT + 256 * 1024);
    expect(chunked.status, chunked.body).toBe(413);
    const small = await completions(wrong, { appId, messages: [question('hi')] });
    expect(small.statusCode).toBe(401);
  });

  it('a share visitor (its credential in the body) keeps the default limit', async () => {
    const answer = await completions({}, { shareId, outLinkUid: 'visitor-2', chatId: 'visitor-big', messages: [question('big', { url: PHOTO })] });
    expect(answer.statusCode).toBe(413);
    expect(await chatFiles('visitor-big')).toHaveLength(0);
  });

  it('a share id next to a valid API key: the link is the caller, so the large body is a 413', async () => {
    const answer = await completions(apiKeyHeaders(key), { shareId, outLinkUid: 'visitor-3', chatId: 'mixed-big', messages: [question('big', { url: PHOTO })] });
    expect(answer.statusCode).toBe(413);
    expect(await chatFiles('mixed-big')).toHaveLength(0);
  });

  it('a valid key past API_BODY_LIMIT_BYTES: 413', async () => {
    const answer = await partialRequest(apiKeyHeaders(key), 64 * 1024, 21 * MB);
    expect(answer.status, answer.body).toBe(413);
  });
});

describe('inline image checks (400 naming the field)', () => {
  it.each([
    ['a text data URL', { url: dataUrl('text/plain', Buffer.from('hello')) }, 'messages.0.content.1.image_url.url', 'must hold an image'],
    ['an image type over bytes that are none', { url: dataUrl('image/png', Buffer.from('<svg onload="x()"/>')) }, 'messages.0.content.1.image_url.url', 'PNG, JPEG, GIF or WebP'],
    ['invalid base64', { url: 'data:image/png;base64,iVBOR%%%w0KGgo=' }, 'messages.0.content.1.image_url.url', 'not valid base64'],
    ['no base64 marker', { url: 'data:image/png,rawbytes' }, 'messages.0.content.1.image_url.url', 'must be base64'],
    ['a bare-string URL that is no image', dataUrl('application/pdf', Buffer.from('%PDF-1.4')), 'messages.0.content.1.image_url', 'must hold an image'],
  ])('%s', async (_label, image, field, words) => {
    const answer = await completions(apiKeyHeaders(key), { appId, chatId: 'refused', messages: [question('look', image)] });
    expect(answer.statusCode, answer.body).toBe(400);
    expect(answer.json().message).toContain(`'${field}'`);
    expect(answer.json().message).toContain(words);
    expect(await humanItems('refused')).toHaveLength(0);
    expect(await chatFiles('refused')).toHaveLength(0);
  });

  it('more inline images than one request may carry: a 400 naming messages', async () => {
    const small = { type: 'image_url', image_url: { url: dataUrl('image/png', PNG) } };
    const answer = await completions(apiKeyHeaders(key), { appId, chatId: 'many', messages: [{ role: 'user', content: [{ type: 'text', text: 'many' }, ...Array.from({ length: 21 }, () => small)] }] });
    expect(answer.statusCode, answer.body).toBe(400);
    expect(answer.json().message).toContain("'messages'");
    expect(answer.json().message).toContain('at most 20 images');
  });
});
