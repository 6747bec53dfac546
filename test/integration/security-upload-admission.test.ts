import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { multipart } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph } from './chat-helpers.js';
import { until } from '../helpers/polling.js';

// Share-page uploads name their credentials as form fields, after the file: their bodies are read
// before the sender is known. With one place for such bodies, a second one is refused at once
// while the first is being read; a sender whose headers prove who it is never waits.
let t: TestApp;
let origin: string;
let token: string;
let shareId: string;

const BOUNDARY = 'held-upload-boundary';

beforeAll(async () => {
  t = await buildTestApp({ UPLOADS_BEFORE_AUTH_MAX: '1', REQUEST_TIMEOUT_MS: '45000' });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  await createUser(t, { username: 'uploader', password: 'password-u1' });
  token = await login(t, 'uploader', 'password-u1');
  const appId = await createPublishedApp(t, token, 'Uploads bot', simpleChatGraph);
  shareId = await ok(t, token, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Uploads' });
});

afterAll(async () => {
  await t?.close();
});

/** A multipart upload with no credential in its headers, whose body is sent only in part until `finish`. */
function heldUpload() {
  const request = httpRequest(`${origin}/api/common/file/upload`, {
    method: 'POST',
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'transfer-encoding': 'chunked' },
  });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    request.on('response', (response) => {
      let body = '';
      response.on('data', (chunk) => {
        body += chunk;
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
  });
  request.write(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="notes.txt"\r\nContent-Type: text/plain\r\n\r\nthe first half of the file, `);
  return {
    answer,
    /** The rest of the file, then the share page's credentials as fields (the reference client's order). */
    finish() {
      const field = (name: string, value: string) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
      request.end(`and the second half\r\n${field('bucketName', 'chat')}${field('shareId', shareId)}${field('outLinkUid', 'visitor-1')}--${BOUNDARY}--\r\n`);
    },
    abort: () => request.destroy(),
  };
}


const upload = (fields: Record<string, string>, headers: Record<string, string> = {}, url = '/api/common/file/upload') => {
  const form = multipart(fields, { name: 'notes.txt', content: 'a small attachment' });
  return t.app.inject({ method: 'POST', url, payload: form.payload, headers: { ...form.headers, ...headers } });
};

describe('uploads read before their sender is known', () => {
  it('take one of the configured places; past them a 429, while senders proven by their headers go on', async () => {
    const held = heldUpload();
    await until(() => t.app.uploadsBeforeAuth.held === 1);

    const refused = await upload({ bucketName: 'chat', shareId, outLinkUid: 'visitor-2' });
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ code: 429, statusText: 'tooManyRequest' });
    expect(refused.json().message).toMatch(/senders not yet identified/);
    expect(refused.headers['retry-after']).toBe('1');
    // The JSON image upload and the transcription route read their bodies before knowing the sender too.
    const image = await t.app.inject({ method: 'POST', url: '/api/common/file/uploadImage', payload: { base64Img: 'data:image/png;base64,iVBORw0KGgo=' } });
    expect(image.statusCode).toBe(429);
    expect((await upload({}, {}, '/api/v1/audio/transcriptions')).statusCode).toBe(429);

    // A session in the headers proves the sender before the body: read at once.
    const member = await upload({ bucketName: 'dataset' }, { token });
    expect(member.statusCode, member.body).toBe(200);
    // A wrong session proves nothing: it waits like any unknown sender.
    expect((await upload({ bucketName: 'dataset' }, { token: 'not-a-session' })).statusCode).toBe(429);

    held.finish();
    const answer = await held.answer;
    expect(answer.status, answer.body).toBe(200);
    await until(() => t.app.uploadsBeforeAuth.held === 0);
    const stored = await t.app.mongo.db.collection('chat.files').countDocuments({ filename: 'notes.txt' });
    expect(stored).toBe(1);
  });

  it('are received within REQUEST_TIMEOUT_MS: a sender trickling its body cannot keep its place for ever', () => {
    expect(t.app.server.requestTimeout).toBe(45_000);
    // Node checks a request against the shorter of the two: the headers' own 60 s must not be longer.
    expect(t.app.server.headersTimeout).toBe(45_000);
  });

  it('give their place back when the client goes away, and when they are refused', async () => {
    const held = heldUpload();
    held.answer.catch(() => undefined);
    await until(() => t.app.uploadsBeforeAuth.held === 1);
    held.abort();
    await until(() => t.app.uploadsBeforeAuth.held === 0);

    const anonymous = await upload({ bucketName: 'chat' });
    expect(anonymous.statusCode).toBe(401);
    expect(t.app.uploadsBeforeAuth.held).toBe(0);
    const visitor = await upload({ bucketName: 'chat', shareId, outLinkUid: 'visitor-3' });
    expect(visitor.statusCode, visitor.body).toBe(200);
    expect(t.app.uploadsBeforeAuth.held).toBe(0);
  });
});
