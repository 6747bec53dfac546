import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_LEXICAL_MODEL } from '../../src/platform/system/model-config.js';
import type { TestApp } from '../helpers/app.js';
import { type FakeOpenAi, fakeModelConfig } from '../helpers/fake-openai.js';
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
  // The built-in lexical model first (the default), and a remote one served by the fake provider.
  ({ t, fake } = await startChatApp((provider) => {
    const dir = mkdtempSync(join(tmpdir(), 'openai-endpoints-'));
    const remote = { model: 'fake-embed', name: 'Fake embed', provider: 'openai', defaultToken: 512, maxToken: 3000, weight: 100, requestUrl: provider.baseUrl, requestAuth: 'sk-fake' };
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...fakeModelConfig(provider.baseUrl), vectorModels: [LOCAL_LEXICAL_MODEL, remote] }));
    return { MODEL_CONFIG_PATH: join(dir, 'config.json') };
  }));
  await createUser(t, { username: 'oa', password: 'password-oa1' });
  tok = await login(t, 'oa', 'password-oa1');
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('v1/embeddings', () => {
  const embedWith = (payload: Record<string, unknown>, headers: Record<string, string> = authHeaders(tok)) =>
    t.app.inject({ method: 'POST', url: '/api/v1/embeddings', headers, payload });
  const embed = embedWith;
  const fromBase64 = (text: string) => {
    const bytes = Buffer.from(text, 'base64');
    return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
  };

  it('takes a batch past BODY_LIMIT_BYTES from a key or session (an SDK batch of CJK chunks), and refuses it unread from anyone else', async () => {
    const texts = Array.from({ length: 1000 }, (_, i) => `第${i}段：${'退款政策与办公时间说明'.repeat(40)}`);
    const payload = JSON.stringify({ input: texts });
    expect(Buffer.byteLength(payload)).toBeGreaterThan(t.config.BODY_LIMIT_BYTES);
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/embeddings', headers: { ...authHeaders(tok), 'content-type': 'application/json' }, payload });
    expect(res.statusCode, res.body.slice(0, 300)).toBe(200);
    expect(res.json().data).toHaveLength(1000);
    for (const headers of [{}, { authorization: 'Bearer fastgpt-notakey0000000000000000' }]) {
      const refused = await t.app.inject({ method: 'POST', url: '/api/v1/embeddings', headers: { ...headers, 'content-type': 'application/json' }, payload });
      expect(refused.statusCode, refused.body.slice(0, 300)).toBe(413);
    }
  });

  it('embeds every input of a batch, in order, with usage summed (as OpenAI, for LangChain and LlamaIndex)', async () => {
    const texts = ['refund policy for orders', 'opening hours of the office', 'how to reset a password'];
    const res = await embed({ input: texts, model: 'text-embedding-ada-002' });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ object: 'list', model: 'text-embedding-ada-002' });
    expect(body.data.map((d: { object: string; index: number }) => [d.object, d.index])).toEqual([
      ['embedding', 0],
      ['embedding', 1],
      ['embedding', 2],
    ]);
    // Each vector is that text's own embedding: the same as embedding it alone.
    let tokens = 0;
    for (const [index, text] of texts.entries()) {
      const single = (await embed({ input: text })).json();
      expect(body.data[index].embedding).toEqual(single.data[0].embedding);
      expect(single.data[0].embedding).toHaveLength(1536);
      tokens += single.usage.total_tokens;
    }
    expect(new Set(body.data.map((d: { embedding: number[] }) => JSON.stringify(d.embedding))).size).toBe(3);
    expect(body.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
  });

  it('answers base64 little-endian float32 for encoding_format "base64" (the OpenAI SDK default)', async () => {
    const floats = (await embed({ input: ['alpha beta', 'gamma'], encoding_format: 'float' })).json();
    const res = await embed({ input: ['alpha beta', 'gamma'], model: 'text-embedding-3-small', encoding_format: 'base64', user: 'end-user-1' });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    for (const index of [0, 1]) {
      expect(typeof body.data[index].embedding).toBe('string');
      const decoded = fromBase64(body.data[index].embedding);
      expect(decoded).toHaveLength(1536);
      for (const [i, value] of decoded.entries()) expect(value).toBeCloseTo(floats.data[index].embedding[i], 6);
    }
  });

  it('refuses more than 2048 inputs, empty inputs and other types with a 400 naming the problem', async () => {
    const tooMany = await embed({ input: Array.from({ length: 2049 }, (_, i) => `text ${i}`) });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json().message).toMatch(/2048/);
    const emptyOne = await embed({ input: ['fine', ''] });
    expect(emptyOne.statusCode).toBe(400);
    expect(emptyOne.json().message).toMatch(/input\.1/);
    for (const input of [42, '', [], [[1, 2, 3]]]) {
      const bad = await embed({ input });
      expect(bad.statusCode, JSON.stringify(input)).toBe(400);
      expect(bad.json().message).toMatch(/input/);
    }
    expect((await embed({ input: 'x', encoding_format: 'hex' })).statusCode).toBe(400);
  });

  it('shortens vectors to `dimensions` as text-embedding-3 does: the first components, back to unit length, float and base64', async () => {
    // A remote model's vectors: 1536 components, information in every one.
    const remoteVector = (input: string) => Array.from({ length: 1536 }, (_, i) => Math.sin(i + input.length) / 28);
    fake.route('POST', '/v1/embeddings', (request) => {
      const inputs = (request.body as { input: string[] }).input;
      return { json: { data: inputs.map((input, index) => ({ index, embedding: remoteVector(input) })), usage: { prompt_tokens: 3, total_tokens: 3 } } };
    });
    const embed = (payload: Record<string, unknown>) => embedWith({ model: 'fake-embed', ...payload });
    const text = 'refund policy for orders shipped abroad, with the opening hours of every office';
    const full: number[] = (await embed({ input: text })).json().data[0].embedding;
    const prefixNorm = Math.hypot(...full.slice(0, 100));
    // The prefix alone is shorter than unit length, so the renormalisation shows.
    expect(prefixNorm).toBeGreaterThan(0);
    expect(prefixNorm).toBeLessThan(0.999);
    const res = await embed({ input: [text, 'second text'], dimensions: 100, encoding_format: 'float' });
    expect(res.statusCode, res.body).toBe(200);
    const short: number[] = res.json().data[0].embedding;
    expect(short).toHaveLength(100);
    expect(res.json().data[1].embedding).toHaveLength(100);
    for (const [i, value] of short.entries()) expect(value).toBeCloseTo(full[i]! / prefixNorm, 9);
    expect(Math.hypot(...short)).toBeCloseTo(1, 9);
    const base64 = await embed({ input: text, dimensions: 100, encoding_format: 'base64' });
    expect(base64.statusCode, base64.body).toBe(200);
    const decoded = fromBase64(base64.json().data[0].embedding);
    expect(decoded).toHaveLength(100);
    for (const [i, value] of decoded.entries()) expect(value).toBeCloseTo(short[i]!, 6);
    // The full size is the vectors as they are.
    expect((await embed({ input: text, dimensions: 1536 })).json().data[0].embedding).toEqual(full);
    fake.unroute('POST', '/v1/embeddings');
  });

  it('folds the built-in lexical model’s vectors to `dimensions` (a prefix of hashed features would be zeros for a short text)', async () => {
    for (const input of ['hello', 'x', '好', '?', '😀']) {
      const res = await embedWith({ input, dimensions: 8, encoding_format: 'float' });
      expect(res.statusCode, res.body).toBe(200);
      const vector: number[] = res.json().data[0].embedding;
      expect(vector).toHaveLength(8);
      expect(Math.hypot(...vector), input).toBeCloseTo(1, 9);
    }
    // At 256 components and above, the vector is the model's own (zero-padded past 256).
    const full: number[] = (await embedWith({ input: 'refund policy', encoding_format: 'float' })).json().data[0].embedding;
    const at256: number[] = (await embedWith({ input: 'refund policy', dimensions: 256, encoding_format: 'float' })).json().data[0].embedding;
    for (const [i, value] of at256.entries()) expect(value).toBeCloseTo(full[i]!, 9);
  });

  it('refuses `dimensions` above the vectors\' 1536, below 1 or not an integer with a 400 naming it', async () => {
    for (const dimensions of [1537, 3072, 0, -5, 12.5, '256']) {
      const res = await embed({ input: 'x', dimensions });
      expect(res.statusCode, JSON.stringify(dimensions)).toBe(400);
      expect(res.json().message).toMatch(/'dimensions'/);
    }
    expect((await embed({ input: 'x', dimensions: 4000 })).json().message).toMatch(/1536/);
  });

  it('refuses token-id input (LangChain-Python\'s default) with a 400 that says to send text', async () => {
    for (const input of [[15339, 1917], [[15339, 1917], [40, 1097]]]) {
      const res = await embed({ input, model: 'text-embedding-ada-002' });
      expect(res.statusCode, JSON.stringify(input)).toBe(400);
      const { message } = res.json();
      expect(message).toMatch(/^Invalid field 'input': token ids are not accepted/);
      expect(message).toMatch(/send the text/);
      expect(message).toMatch(/check_embedding_ctx_length=False/);
    }
    // Anything else that is not text keeps the plain message.
    expect((await embed({ input: { text: 'x' } })).json().message).toMatch(/input must be a string or an array of strings/);
  });

  it('takes a session or a global API key; anonymous callers get 401', async () => {
    const key = await createApiKey(t, tok, { name: 'emb' });
    const viaKey = await embed({ input: ['hello', 'world'] }, apiKeyHeaders(key));
    expect(viaKey.statusCode, viaKey.body).toBe(200);
    expect(viaKey.json().data).toHaveLength(2);
    expect((await embed({ input: 'x' }, {})).statusCode).toBe(401);
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
    // The envelope for FastGPT's web client (data), and `text` where OpenAI's SDKs read it.
    expect(res.json()).toEqual({ code: 200, statusText: '', message: '', data: 'transcribed words', text: 'transcribed words' });
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
    // A share id without the visitor's uid is refused naming the field, as on every chat-cert route.
    const noUid = multipart([
      { name: 'file', filename: 'recording.mp3', content: Buffer.from('ID3') },
      { name: 'data', content: JSON.stringify({ shareId }) },
    ]);
    const refused = await t.app.inject({ method: 'POST', url: '/api/v1/audio/transcriptions', headers: { ...authHeaders(tok), ...noUid.headers }, payload: noUid.payload });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().message).toMatch(/outLinkUid/);
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

  it('records whisper usage by the reported duration, per 60 s, for the caller (user or share link)', async () => {
    const usages = t.app.mongo.db.collection('usages');
    await t.app.identity.usage.drain();
    await usages.deleteMany({ appName: 'Whisper' });
    const appId = await createPublishedApp(t, tok, 'Dictation', simpleChatGraph);
    const shareId = await ok(t, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'dictation link' });
    const send = (data: Record<string, unknown>, headers: Record<string, string> = {}) => {
      const form = multipart([
        { name: 'file', filename: 'recording.mp3', type: 'audio/mpeg', content: Buffer.from('ID3-audio') },
        { name: 'data', content: JSON.stringify(data) },
      ]);
      return t.app.inject({ method: 'POST', url: '/api/v1/audio/transcriptions', headers: { ...headers, ...form.headers }, payload: form.payload });
    };
    expect((await send({ appId, duration: 30 }, authHeaders(tok))).statusCode).toBe(200);
    expect((await send({ appId, duration: 90, shareId, outLinkUid: 'visitor' })).statusCode).toBe(200);
    expect((await send({ appId }, authHeaders(tok))).statusCode).toBe(200);
    // A long recording reported as one second is billed by what its size implies (256 kbit/s at most): 100 s.
    const long = multipart([
      { name: 'file', filename: 'long.mp3', type: 'audio/mpeg', content: Buffer.alloc(3_200_000, 1) },
      { name: 'data', content: JSON.stringify({ appId, duration: 1 }) },
    ]);
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/audio/transcriptions', headers: { ...authHeaders(tok), ...long.headers }, payload: long.payload })).statusCode).toBe(200);
    await t.app.identity.usage.drain();
    const records = await usages.find({ appName: 'Whisper' }).sort({ _id: 1 }).toArray();
    expect(records.map((r) => [r.source, r.totalPoints, r.list[0].duration, r.list[0].model])).toEqual([
      ['fastgpt', 3, 30, 'Whisper'],
      ['shareLink', 9, 90, 'Whisper'],
      // No duration reported: the 9 bytes at 16 kbit/s, rounded up to a second.
      ['fastgpt', 0.1, 1, 'Whisper'],
      ['fastgpt', 10, 100, 'Whisper'],
    ]);
    // The link's records go to its creator, here the same member as the session's.
    const user = await t.app.mongo.db.collection('users').findOne({ username: 'oa' });
    const member = await t.app.mongo.db.collection('team_members').findOne({ userId: user!._id });
    for (const record of records) expect([String(record.teamId), String(record.tmbId)]).toEqual([String(member!.teamId), String(member!._id)]);
  });
});

describe('v1/audio/transcriptions from OpenAI SDK clients', () => {
  const audio = { name: 'file', filename: 'recording.mp3', type: 'audio/mpeg', content: Buffer.alloc(1024, 7) };
  const transcribe = (parts: Parameters<typeof multipart>[0], headers: Record<string, string>) => {
    const form = multipart(parts);
    return t.app.inject({ method: 'POST', url: '/api/v1/audio/transcriptions', headers: { ...headers, ...form.headers }, payload: form.payload });
  };

  it("takes the SDK's form (model, language, prompt, response_format, temperature, timestamp_granularities[]) and answers `text`", async () => {
    const sdkFields = [
      ['model', 'whisper-1'],
      ['language', 'en'],
      ['prompt', 'A support call.'],
      ['response_format', 'verbose_json'],
      ['temperature', '0'],
      ['timestamp_granularities[]', 'word'],
      ['timestamp_granularities[]', 'segment'],
    ].map(([name, content]) => ({ name: name!, content: content! }));
    const res = await transcribe([...sdkFields, audio], authHeaders(tok));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ code: 200, data: 'transcribed words', text: 'transcribed words' });
  });

  it('takes 20 text fields; more is a 400 saying too many form fields (not 413), wherever the file is', async () => {
    const fields = (count: number) => Array.from({ length: count }, (_, i) => ({ name: `field${i}`, content: 'x' }));
    expect((await transcribe([...fields(20), audio], authHeaders(tok))).statusCode).toBe(200);
    for (const parts of [[...fields(21), audio], [audio, ...fields(21)], [...fields(60), audio]]) {
      const res = await transcribe(parts, authHeaders(tok));
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().message).toMatch(/^Too many form fields: at most 20/);
    }
  });

  it('refuses an API key (as the reference) with a 401 saying API keys are not accepted here', async () => {
    const key = await createApiKey(t, tok, { name: 'whisper key' });
    const res = await transcribe([{ name: 'model', content: 'whisper-1' }, audio], apiKeyHeaders(key));
    expect(res.statusCode, res.body).toBe(401);
    expect(res.json().message).toMatch(/API key is not accepted here; this endpoint accepts outLink, teamSpace, session/);
    expect(res.json().message).not.toMatch(/Missing credentials/);
    // Without any credential the message stays the plain one.
    expect((await transcribe([audio], {})).json().message).toMatch(/^Missing credentials: this endpoint accepts/);
    // The same on any route that takes no API key (ai/token takes the root key only).
    const token = await t.app.inject({ method: 'POST', url: '/api/core/ai/token', headers: apiKeyHeaders(key), payload: { messages: [] } });
    expect(token.statusCode).toBe(401);
    expect(token.json().message).toBe('An API key is not accepted here; this endpoint accepts rootKey');
  });
});

describe('v1/audio/transcriptions with a truncated body', () => {
  it('answers 400, with or without credentials, never 500', async () => {
    const boundary = '----cut-short';
    const cut = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="recording.mp3"\r\nContent-Type: audio/mpeg\r\n\r\nID3-audio-bytes-and-then-nothing`;
    for (const headers of [authHeaders(tok), {}]) {
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/audio/transcriptions', headers: { ...headers, 'content-type': `multipart/form-data; boundary=${boundary}` }, payload: cut });
      expect(res.statusCode, res.body).toBe(400);
    }
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

  it('createQuestionGuide sends the chat box turns as text only (file and image parts left out)', async () => {
    fake.reply = () => '["And then?"]';
    const messages = [
      { role: 'user', content: [{ type: 'file_url', name: 'a.pdf', url: '/api/common/file/read?token=x' }, { type: 'image_url', image_url: { url: '/api/common/file/read?token=y' } }, { type: 'text', text: 'what is in these?' }] },
      { role: 'assistant', content: 'A report and a chart.' },
    ];
    expect(await ok(t, tok, 'POST', '/core/ai/agent/createQuestionGuide', { messages })).toEqual(['And then?']);
    const sent = (fake.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)!.body as { messages: { role: string; content: unknown }[] }).messages;
    expect(sent.slice(0, 2)).toEqual([
      { role: 'user', content: 'what is in these?' },
      { role: 'assistant', content: 'A report and a chart.' },
    ]);
  });

  // The 4.8.10 web client's chats2GPTMessages makes an assistant message of a user select's
  // interactive value, with no content: that was a 400, and the guide stayed empty after every select.
  it('createQuestionGuide leaves out what holds no text: an interactive value, tool calls and results', async () => {
    fake.reply = () => '["And then?"]';
    const interactive = { type: 'userSelect', params: { description: 'Pick one', userSelectOptions: [{ key: 'a', value: 'Confirm' }], userSelectedVal: 'Confirm' } };
    const messages = [
      { role: 'developer', content: 'Be brief.' },
      { role: 'user', content: 'I want a refund' },
      { role: 'assistant', interactive },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'refund', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
      { role: 'assistant', content: 'Refund started.', interactive },
    ];
    expect(await ok(t, tok, 'POST', '/core/ai/agent/createQuestionGuide', { messages })).toEqual(['And then?']);
    const sent = (fake.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)!.body as { messages: unknown[] }).messages;
    expect(sent.slice(0, -1)).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'I want a refund' },
      { role: 'assistant', content: 'Refund started.' },
    ]);
    expect((await call(t, tok, 'POST', '/core/ai/agent/createQuestionGuide', { messages: [{ role: 'robot', content: 'x' }] })).body.message).toContain('messages.0.role');
  });

  it('ai/token needs the root key', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/core/ai/token', headers: { rootkey: t.config.ROOT_KEY }, payload: { messages: [{ role: 'user', content: 'count these words please' }] } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data.tokens).toBeGreaterThan(3);
    // No process memory figures (heap, rss) leave the process.
    expect(Object.keys(res.json().data).sort()).toEqual(['time', 'tokens']);
    expect(res.body).not.toMatch(/rss|heap/i);
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
    // Another team's identical request is spoken (and billed) for it: the cache is per team.
    await createUser(t, { username: 'oa-other', password: 'password-oa2' });
    const otherTeam = await login(t, 'oa-other', 'password-oa2');
    const other = await t.app.inject({ method: 'POST', url: '/api/core/chat/item/getSpeech', headers: authHeaders(otherTeam), payload: { ttsConfig: { type: 'model', model: 'tts-1', voice: 'alloy' }, input: 'read me' } });
    expect(other.body).toBe('ID3-fake-mp3');
    expect(calls()).toBe(before + 1);
    // Billed once per team, per 1000 characters spoken; the cached answer costs nothing.
    await t.app.identity.usage.drain();
    const records = await t.app.mongo.db.collection('usages').find({ appName: 'Speech' }).toArray();
    const billed = ['fastgpt', (2 * 'read me'.length) / 1000, 'read me'.length, 'TTS'];
    expect(records.map((r) => [r.source, r.totalPoints, r.list[0].charsLength, r.list[0].model])).toEqual([billed, billed]);
    expect(new Set(records.map((r) => String(r.teamId))).size).toBe(2);
    const badVoice = await call(t, tok, 'POST', '/core/chat/item/getSpeech', { ttsConfig: { model: 'tts-1', voice: 'nobody' }, input: 'x' });
    expect(badVoice.status).toBe(400);
    expect(badVoice.body.message).toMatch(/voice not found/);
  });
});

describe('speech is relayed as it arrives', () => {
  /** A speech provider that sends `first`, then holds `rest` back until released. */
  function heldSpeech(first: string, rest: string): () => void {
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    fake.route('POST', '/v1/audio/speech', () => ({
      stream: async (res) => {
        res.writeHead(200, { 'content-type': 'audio/mpeg' });
        res.write(first);
        await released;
        res.end(rest);
      },
    }));
    return release;
  }

  it('the first part of the MP3 reaches the client before the provider has sent the rest; the whole is cached', async () => {
    const release = heldSpeech('ID3-first', '-rest');
    try {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = t.app.server.address() as AddressInfo;
      const body = await new Promise<string>((resolve, reject) => {
        const request = httpRequest({ host: '127.0.0.1', port, path: '/api/core/chat/item/getSpeech', method: 'POST', headers: { ...authHeaders(tok), 'content-type': 'application/json' } }, (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => {
            // The provider holds the rest back until this part has reached the client.
            if (!text) release();
            text += chunk.toString();
          });
          response.on('end', () => resolve(text));
          response.on('error', reject);
        });
        request.on('error', reject);
        request.end(JSON.stringify({ ttsConfig: { model: 'tts-1', voice: 'alloy' }, input: 'streamed words' }));
      });
      expect(body).toBe('ID3-first-rest');
      const cached = await t.app.inject({ method: 'POST', url: '/api/core/chat/item/getSpeech', headers: authHeaders(tok), payload: { ttsConfig: { model: 'tts-1', voice: 'alloy' }, input: 'streamed words' } });
      expect(cached.body).toBe('ID3-first-rest');
    } finally {
      release();
      fake.unroute('POST', '/v1/audio/speech');
    }
  });

  it('a client closing the connection after the first part is still billed, and nothing is cached', async () => {
    const release = heldSpeech('ID3-part', '-never-heard');
    const input = `aborted words ${Date.now()}`;
    const speechRecords = async () => {
      await t.app.identity.usage.drain();
      return t.app.mongo.db.collection('usages').countDocuments({ appName: 'Speech', 'list.charsLength': input.length });
    };
    try {
      if (!t.app.server.listening) await t.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = t.app.server.address() as AddressInfo;
      const before = await speechRecords();
      await new Promise<void>((resolve, reject) => {
        const request = httpRequest({ host: '127.0.0.1', port, path: '/api/core/chat/item/getSpeech', method: 'POST', headers: { ...authHeaders(tok), 'content-type': 'application/json' } }, (response) => {
          response.once('data', () => {
            request.destroy();
            resolve();
          });
          response.on('error', () => undefined);
        });
        request.on('error', () => undefined);
        request.on('close', () => resolve());
        request.end(JSON.stringify({ ttsConfig: { model: 'tts-1', voice: 'alloy' }, input })).on('error', reject);
      });
      // Once the server has seen the connection close, the provider sends the rest: the relay
      // stops there (the client is gone), bills what was made and caches nothing.
      const openConnections = () => new Promise<number>((resolve) => t.app.server.getConnections((_error, count) => resolve(count)));
      await expect.poll(openConnections, { timeout: 5000 }).toBe(0);
      release();
      await expect.poll(speechRecords, { timeout: 5000 }).toBe(before + 1);
      const calls = () => fake.requests.filter((r) => r.path === '/v1/audio/speech').length;
      const callsBefore = calls();
      fake.route('POST', '/v1/audio/speech', () => ({ stream: async (res) => {
        res.end('ID3-again');
      } }));
      await t.app.inject({ method: 'POST', url: '/api/core/chat/item/getSpeech', headers: authHeaders(tok), payload: { ttsConfig: { model: 'tts-1', voice: 'alloy' }, input } });
      expect(calls()).toBe(callsBefore + 1);
    } finally {
      release();
      fake.unroute('POST', '/v1/audio/speech');
    }
  });
});

describe('transcriptions of small files are not free', () => {
  it('bills at least 1 s, and a file without a duration at 16 kbit/s (rounded up), so a 2-point link is used up', async () => {
    const appId = await createPublishedApp(t, tok, 'Short clips', simpleChatGraph);
    const shareId = await ok(t, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'clips link', limit: { maxUsagePoints: 2 } });
    const links = t.app.mongo.db.collection('outlinks');
    const send = (bytes: number, duration?: number) => {
      const form = multipart([
        { name: 'file', filename: 'clip.ogg', type: 'audio/ogg', content: Buffer.alloc(bytes, 1) },
        { name: 'data', content: JSON.stringify({ appId, shareId, outLinkUid: 'clipper', ...(duration === undefined ? {} : { duration }) }) },
      ]);
      return t.app.inject({ method: 'POST', url: '/api/v1/audio/transcriptions', headers: form.headers, payload: form.payload });
    };
    const points = async () => (await links.findOne({ shareId }))!.usagePoints as number;
    // Whisper costs 6 points a minute here (0.1 a second).
    expect((await send(3, 0)).statusCode).toBe(200);
    expect(await points()).toBeCloseTo(0.1, 6);
    expect((await send(1_000)).statusCode).toBe(200);
    expect(await points()).toBeCloseTo(0.2, 6);
    // 31,999 bytes without a duration: 16 s (it was 0 s at 256 kbit/s, rounded down).
    expect((await send(31_999)).statusCode).toBe(200);
    expect(await points()).toBeCloseTo(1.8, 6);
    // A reported duration stands when the size implies less at 256 kbit/s.
    expect((await send(31_999, 3)).statusCode).toBe(200);
    expect(await points()).toBeCloseTo(2.1, 6);
    const refused = await send(3, 1);
    expect(refused.statusCode, refused.body).toBe(403);
    expect(refused.json()).toMatchObject({ statusText: 'linkUnInvalid', message: expect.stringMatching(/used all of its 2 usage points/) });
  });
});

describe('a share link pays for every model call through it', () => {
  it('counts transcriptions against the link, then refuses the question guide, speech and transcription once its points are used or it has expired', async () => {
    const appId = await createPublishedApp(t, tok, 'Limited voice', simpleChatGraph);
    const shareId = await ok(t, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'limited link', limit: { maxUsagePoints: 10 } });
    const links = t.app.mongo.db.collection('outlinks');
    const visitor = { shareId, outLinkUid: 'visitor-limited' };
    const transcribe = (duration: number) => {
      const form = multipart([
        { name: 'file', filename: 'recording.mp3', type: 'audio/mpeg', content: Buffer.from('ID3-audio') },
        { name: 'data', content: JSON.stringify({ appId, duration, ...visitor }) },
      ]);
      return t.app.inject({ method: 'POST', url: '/api/v1/audio/transcriptions', headers: form.headers, payload: form.payload });
    };
    const guide = () => t.app.inject({ method: 'POST', url: '/api/core/ai/agent/createQuestionGuide', payload: { messages: [{ role: 'user', content: 'hi' }], ...visitor } });
    const speak = () => t.app.inject({ method: 'POST', url: '/api/core/chat/item/getSpeech', payload: { ttsConfig: { model: 'tts-1', voice: 'alloy' }, input: `limited ${Date.now()}`, ...visitor } });
    const modelCalls = () => fake.requests.length;

    // 90 s and 60 s of whisper: 9 then 6 points, both counted on the link (it had points left before each).
    expect((await transcribe(90)).statusCode).toBe(200);
    expect((await links.findOne({ shareId }))!.usagePoints).toBe(9);
    expect((await transcribe(60)).statusCode).toBe(200);
    expect((await links.findOne({ shareId }))!.usagePoints).toBe(15);

    const before = modelCalls();
    for (const send of [guide, speak, () => transcribe(30)]) {
      const refused = await send();
      expect(refused.statusCode, refused.body).toBe(403);
      expect(refused.json()).toMatchObject({ statusText: 'linkUnInvalid', message: expect.stringMatching(/used all of its 10 usage points/) });
    }
    expect(modelCalls()).toBe(before);
    expect((await links.findOne({ shareId }))!.usagePoints).toBe(15);

    // Unlimited again, but expired: refused as well; the owner's own calls are unaffected.
    await links.updateOne({ shareId }, { $set: { 'limit.maxUsagePoints': -1, 'limit.expiredTime': new Date(Date.now() - 60_000) } });
    for (const send of [guide, speak, () => transcribe(30)]) expect((await send()).json().message).toMatch(/expired/);
    expect(modelCalls()).toBe(before);
    fake.reply = () => '["Next?"]';
    expect(await ok(t, tok, 'POST', '/core/ai/agent/createQuestionGuide', { messages: [{ role: 'user', content: 'hi' }] })).toEqual(['Next?']);
  });
});
