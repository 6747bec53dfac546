import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import type { TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { answerOnlyGraph, startChatApp } from './chat-helpers.js';

/**
 * Date fields read ISO text or milliseconds, nothing else. `z.coerce.date()` read null, true,
 * "10" and [5] as dates (1970-01-01, 2001-10-01…): an image stored already expired, a log filter
 * ending in 1970, a collection created in 2001, all answered 200. Now null is absent (as every
 * optional field) and anything else that is not a date is a 400 naming the field.
 */
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f8e9a90000000049454e44ae426082', 'hex');

let t: TestApp;
let fake: FakeOpenAi;
let token: string;
let appId: string;
let datasetId: string;

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'dates-owner', password: 'password-dates-1' });
  token = await login(t, 'dates-owner', 'password-dates-1');
  appId = await ok(t, token, 'POST', '/core/app/create', { name: 'answer app', type: 'advanced', modules: answerOnlyGraph.nodes, edges: answerOnlyGraph.edges });
  datasetId = await ok(t, token, 'POST', '/core/dataset/create', { name: 'dates dataset' });
}, 60_000);

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const post = (url: string, payload: unknown) => t.app.inject({ method: 'POST', url: `/api${url}`, headers: { token }, payload: payload as Record<string, unknown> });
const createCollection = (name: string, createTime: unknown) => post('/core/dataset/collection/create', { datasetId, name, type: 'virtual', createTime });
const storedCreateTime = async (name: string) => (await t.app.mongo.db.collection('dataset_collections').findOne({ name }))?.createTime;

describe('date fields', () => {
  it('uploadImage: expiredTime null is no expiry (the image is served), a bad one a 400', async () => {
    const image = `data:image/png;base64,${PNG.toString('base64')}`;
    const uploaded = await post('/common/file/uploadImage', { base64Img: image, expiredTime: null });
    expect(uploaded.statusCode, uploaded.body).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: uploaded.json().data })).statusCode).toBe(200);
    const refused = await post('/common/file/uploadImage', { base64Img: image, expiredTime: true });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().message).toContain('expiredTime');
  });

  it('an image is refused from the instant of its expiredTime on, as API keys and share links are', async () => {
    const expiresAt = Date.now() + 60_000;
    const uploaded = await post('/common/file/uploadImage', { base64Img: `data:image/png;base64,${PNG.toString('base64')}`, expiredTime: expiresAt });
    expect(uploaded.statusCode, uploaded.body).toBe(200);
    const served = async (at: number) => {
      vi.useFakeTimers({ toFake: ['Date'], now: at });
      try {
        return (await t.app.inject({ method: 'GET', url: uploaded.json().data })).statusCode;
      } finally {
        vi.useRealTimers();
      }
    };
    expect(await served(expiresAt - 1)).toBe(200);
    expect(await served(expiresAt)).toBe(404);
  });

  it('share links and API keys: a UTC year past 9999 is a 400 naming expiredTime; the last second of 9999 is listed and sent back as listed', async () => {
    // 9999-12-31T23:59:59-05:00 is year 10000 in UTC: stored, it was listed as "+010000-…", which the
    // reference's edit forms send back on every save and which was then refused.
    const lastSecond = '9999-12-31T18:59:59-05:00';
    for (const expiredTime of ['9999-12-31T23:59:59-05:00', Date.UTC(10000, 0, 1), -8.64e15]) {
      const link = await post('/support/outLink/create', { appId, type: 'share', name: 'far', limit: { expiredTime } });
      expect(link.statusCode, link.body).toBe(400);
      expect(link.json().message).toContain('expiredTime');
      const key = await post('/support/openapi/create', { appId, name: 'far', limit: { expiredTime } });
      expect(key.statusCode, key.body).toBe(400);
      expect(key.json().message).toContain('expiredTime');
    }
    await ok(t, token, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'last second', limit: { expiredTime: lastSecond } });
    const links = (await ok(t, token, 'GET', '/support/outLink/list', { appId, type: 'share' })) as { _id: string; name: string; limit: Record<string, unknown> }[];
    const listed = links.find((l) => l.name === 'last second');
    expect(listed?.limit.expiredTime).toBe('9999-12-31T23:59:59.000Z');
    await ok(t, token, 'POST', '/support/outLink/update', { _id: listed?._id, name: 'renamed', limit: listed?.limit });

    await ok(t, token, 'POST', '/support/openapi/create', { appId, name: 'last second', limit: { expiredTime: lastSecond } });
    const keys = (await ok(t, token, 'GET', '/support/openapi/list', { appId })) as { _id: string; name: string; limit: Record<string, unknown> }[];
    const key = keys.find((k) => k.name === 'last second');
    expect(key?.limit.expiredTime).toBe('9999-12-31T23:59:59.000Z');
    await ok(t, token, 'POST', '/support/openapi/update', { _id: key?._id, name: 'renamed', limit: key?.limit });
  });

  it('getChatLogs: dateEnd null is no end; an ISO end still filters', async () => {
    const chat = await post('/v1/chat/completions', { appId, chatId: 'dated', messages: [{ role: 'user', content: 'hi' }] });
    expect(chat.statusCode, chat.body).toBe(200);
    const total = async (body: Record<string, unknown>) => (await post('/core/app/getChatLogs', { appId, ...body })).json().data.total;
    expect(await total({})).toBe(1);
    expect(await total({ dateEnd: null })).toBe(1);
    expect(await total({ dateEnd: '2020-01-01T00:00:00.000Z' })).toBe(0);
    expect(await total({ dateStart: Date.now() - 3_600_000 })).toBe(1);
  });

  it('collection create: ISO text and milliseconds are stored, null is now, anything else a 400 naming createTime', async () => {
    expect((await createCollection('iso', '2024-05-06T07:08:09.000Z')).statusCode).toBe(200);
    expect(await storedCreateTime('iso')).toEqual(new Date('2024-05-06T07:08:09.000Z'));
    expect((await createCollection('millis', Date.UTC(2023, 0, 2))).statusCode).toBe(200);
    expect(await storedCreateTime('millis')).toEqual(new Date(Date.UTC(2023, 0, 2)));
    const before = Date.now();
    expect((await createCollection('null', null)).statusCode).toBe(200);
    expect((await storedCreateTime('null')).getTime()).toBeGreaterThanOrEqual(before - 1000);
    for (const [name, createTime] of [['true', true], ['text ten', '10'], ['array', [5]], ['month 13', '2024-13-45'], ['object', {}]] as const) {
      const refused = await createCollection(name, createTime);
      expect(refused.statusCode, name).toBe(400);
      expect(refused.json().message, name).toMatch(/createTime.*must be an ISO 8601 date/);
      expect(await storedCreateTime(name), name).toBeUndefined();
    }
  });
});
