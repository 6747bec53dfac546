import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, authHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { call, ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let tok: string;

function multipart(parts: { name: string; filename?: string; content: string | Buffer; type?: string }[]) {
  const boundary = '----chat-test-boundary';
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename ? `; filename="${part.filename}"` : ''}`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${part.type ? `Content-Type: ${part.type}\r\n` : ''}\r\n`));
    chunks.push(Buffer.isBuffer(part.content) ? part.content : Buffer.from(part.content));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'oa', password: 'password-oa1' });
  tok = await login(t, 'oa', 'password-oa1');
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('v1/embeddings', () => {
  it('embeds the first input with the default model, 1536 dimensions, for a session or any API key', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/embeddings', headers: authHeaders(tok), payload: { input: ['first text', 'ignored'], model: 'whatever' } });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ object: 'list', model: 'whatever', data: [{ object: 'embedding', index: 0 }] });
    expect(body.data[0].embedding).toHaveLength(1536);
    expect(body.usage.total_tokens).toBeGreaterThan(0);
    const key = await createApiKey(t, tok, { name: 'emb' });
    const viaKey = await t.app.inject({ method: 'POST', url: '/api/v1/embeddings', headers: apiKeyHeaders(key), payload: { input: 'hello' } });
    expect(viaKey.statusCode).toBe(200);
    const bad = await t.app.inject({ method: 'POST', url: '/api/v1/embeddings', headers: authHeaders(tok), payload: { input: 42 } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toMatch(/input/);
    const empty = await t.app.inject({ method: 'POST', url: '/api/v1/embeddings', headers: authHeaders(tok), payload: { input: '' } });
    expect(empty.statusCode).toBe(400);
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/embeddings', payload: { input: 'x' } })).statusCode).toBe(401);
  });
});

describe('v1/audio/transcriptions', () => {
  it('forwards the audio to the whisper endpoint and answers the text', async () => {
    const appId = await createPublishedApp(t, tok, 'Voice', simpleChatGraph);
    const form = multipart([
      { name: 'file', filename: 'recording.mp3', type: 'audio/mpeg', content: Buffer.from('ID3-audio-bytes') },
      { name: 'data', content: JSON.stringify({ appId, duration: 2 }) },
    ]);
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/audio/transcriptions', headers: { ...authHeaders(tok), ...form.headers }, payload: form.payload });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ code: 200, statusText: '', message: '', data: 'transcribed words' });
    const seen = fake.requests.find((r) => r.path === '/v1/audio/transcriptions')!;
    expect(seen.raw.includes(Buffer.from('ID3-audio-bytes'))).toBe(true);
    expect(seen.raw.includes(Buffer.from('whisper-1'))).toBe(true);

    const noAuth = await t.app.inject({ method: 'POST', url: '/api/v1/audio/transcriptions', headers: form.headers, payload: form.payload });
    expect(noAuth.statusCode).toBe(401);
    const shareId = await ok(t, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'voice link' });
    const shared = multipart([
      { name: 'file', filename: 'recording.mp3', type: 'audio/mpeg', content: Buffer.from('ID3') },
      { name: 'data', content: JSON.stringify({ appId, shareId, outLinkUid: 'visitor' }) },
    ]);
    const viaLink = await t.app.inject({ method: 'POST', url: '/api/v1/audio/transcriptions', headers: shared.headers, payload: shared.payload });
    expect(viaLink.statusCode, viaLink.body).toBe(200);
    const badLink = multipart([
      { name: 'file', filename: 'recording.mp3', content: Buffer.from('ID3') },
      { name: 'data', content: JSON.stringify({ shareId: 'nope', outLinkUid: 'visitor' }) },
    ]);
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/audio/transcriptions', headers: badLink.headers, payload: badLink.payload })).statusCode).toBe(403);
    const noFile = multipart([{ name: 'data', content: '{}' }]);
    const missing = await t.app.inject({ method: 'POST', url: '/api/v1/audio/transcriptions', headers: { ...authHeaders(tok), ...noFile.headers }, payload: noFile.payload });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().message).toMatch(/file/);
  });
});

describe('core/ai helpers', () => {
  it('createQuestionGuide parses the model reply into questions', async () => {
    fake.reply = (messages) => (JSON.stringify(messages).includes('follow-up questions') ? 'Sure: ["What next?","How much?","Where?"]' : 'plain');
    const questions = await ok(t, tok, 'POST', '/core/ai/agent/createQuestionGuide', { messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] });
    expect(questions).toEqual(['What next?', 'How much?', 'Where?']);
    fake.reply = () => 'no list here';
    expect(await ok(t, tok, 'POST', '/core/ai/agent/createQuestionGuide', { messages: [{ role: 'user', content: 'hi' }] })).toEqual([]);
    expect((await call(t, tok, 'POST', '/core/ai/agent/createQuestionGuide', { messages: 'x' })).status).toBe(400);
  });

  it('ai/token needs the root key', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/core/ai/token', headers: { rootkey: t.config.ROOT_KEY }, payload: { messages: [{ role: 'user', content: 'count these words please' }] } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data.tokens).toBeGreaterThan(3);
    expect(res.json().data.memory.rss).toBeGreaterThan(0);
    expect((await t.app.inject({ method: 'POST', url: '/api/core/ai/token', headers: authHeaders(tok), payload: { messages: [] } })).statusCode).toBe(401);
  });

  it('getSpeech returns MP3 bytes and checks the voice', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/core/chat/item/getSpeech', headers: authHeaders(tok), payload: { ttsConfig: { type: 'model', model: 'tts-1', voice: 'alloy' }, input: 'read me' } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('audio/mpeg');
    expect(res.body).toBe('ID3-fake-mp3');
    const calls = () => fake.requests.filter((r) => r.path === '/v1/audio/speech').length;
    const before = calls();
    const again = await t.app.inject({ method: 'POST', url: '/api/core/chat/item/getSpeech', headers: authHeaders(tok), payload: { ttsConfig: { type: 'model', model: 'tts-1', voice: 'alloy' }, input: 'read me' } });
    expect(again.body).toBe('ID3-fake-mp3');
    expect(calls()).toBe(before);
    const badVoice = await call(t, tok, 'POST', '/core/chat/item/getSpeech', { ttsConfig: { model: 'tts-1', voice: 'nobody' }, input: 'x' });
    expect(badVoice.status).toBe(400);
    expect(badVoice.body.message).toMatch(/voice not found/);
  });
});
