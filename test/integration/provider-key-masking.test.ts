/**
 * A provider refusing the platform's key and quoting it back (`Incorrect API key provided:
 * Bearer sk-…`) must not hand that key to the caller (a share-link visitor here) or the log.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi, SeenRequest } from '../helpers/fake-openai.js';
import { createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

/** The key of the whisper and speech models (they have no requestAuth); the LLM's is `sk-fake`. */
const PLATFORM_KEY = 'sk-platform-Xy12Zw34Vu56Ts78';

let t: TestApp;
let fake: FakeOpenAi;
let shareId: string;
let appId: string;

const refusal = (request: SeenRequest) => {
  const authorization = String(request.headers.authorization);
  return { status: 401, json: { error: { message: `Incorrect API key provided: ${authorization} (${authorization.slice(7, 17)}…)` } } };
};
const linesWith = (secret: string) => t.logs().split('\n').filter((line) => line.includes(secret));

beforeAll(async () => {
  ({ t, fake } = await startChatApp(() => ({ CHAT_API_KEY: PLATFORM_KEY })));
  await createUser(t, { username: 'masker', password: 'password-mk1' });
  const tok = await login(t, 'masker', 'password-mk1');
  appId = await createPublishedApp(t, tok, 'Bot', simpleChatGraph);
  shareId = await ok(t, tok, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Public' });
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('a provider error quoting the key', () => {
  it('reaches a share-link visitor of a chat as a 502 with the key masked, and stays out of the log', async () => {
    fake.route('POST', '/v1/chat/completions', refusal);
    try {
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', payload: { shareId, outLinkUid: 'visitor', messages: [{ role: 'user', content: 'hi' }] } });
      expect(res.statusCode).toBe(502);
      expect(res.json().message).toContain('Incorrect API key provided: Bearer [redacted]');
      expect(res.body).not.toContain('sk-fake');
      expect(linesWith('sk-fake')).toEqual([]);
    } finally {
      fake.unroute('POST', '/v1/chat/completions');
    }
  });

  it('speech and transcription through the link: the key and its prefix masked', async () => {
    fake.route('POST', '/v1/audio/speech', refusal);
    fake.route('POST', '/v1/audio/transcriptions', refusal);
    try {
      const speech = await t.app.inject({
        method: 'POST',
        url: '/api/core/chat/item/getSpeech',
        payload: { shareId, outLinkUid: 'visitor', ttsConfig: { type: 'model', model: 'tts-1', voice: 'alloy' }, input: 'read me' },
      });
      const boundary = '----key-mask-boundary';
      const form = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\nContent-Type: audio/mpeg\r\n\r\nID3\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="data"\r\n\r\n${JSON.stringify({ appId, shareId, outLinkUid: 'visitor' })}\r\n--${boundary}--\r\n`,
      );
      const transcription = await t.app.inject({ method: 'POST', url: '/api/v1/audio/transcriptions', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, payload: form });
      for (const res of [speech, transcription]) {
        expect(res.statusCode, res.body).toBe(502);
        expect(res.json().message).toContain('Bearer [redacted] ([redacted]…)');
        expect(res.body).not.toContain(PLATFORM_KEY.slice(0, 8));
      }
      expect(linesWith(PLATFORM_KEY.slice(0, 8))).toEqual([]);
    } finally {
      fake.unroute('POST', '/v1/audio/speech');
      fake.unroute('POST', '/v1/audio/transcriptions');
    }
  });
});
