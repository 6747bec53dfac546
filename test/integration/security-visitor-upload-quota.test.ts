import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { multipart } from '../fixtures/datasets/client.js';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

/**
 * Anyone with a public share link (or a team space) may upload chat files and images, and picks
 * their own visitor id: without a bound per team, one link could fill the team's storage.
 * SHARE_UPLOAD_MAX_BYTES_PER_DAY bounds what visitors store per team within 24 hours.
 */
const BOUND = 4096;
const DAY_MS = 24 * 60 * 60 * 1000;
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f8e9a90000000049454e44ae426082', 'hex');

let t: TestApp;
let fake: FakeOpenAi;
let users = 0;

beforeAll(async () => {
  ({ t, fake } = await startChatApp((f) => ({ SHARE_UPLOAD_MAX_BYTES_PER_DAY: String(BOUND), TEAM_TOKEN_AUTH_URL: `${f.origin}/team-auth` })));
  fake.route('POST', '/team-auth', () => ({ json: { success: true, data: { uid: 'team-visitor' } } }));
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

/** A fresh team (its own user) with an app shared by a public link. */
async function sharedTeam() {
  const username = `quota-${++users}`;
  const { teamId } = await createUser(t, { username, password: 'password-q1' });
  const token = await login(t, username, 'password-q1');
  const appId = await createPublishedApp(t, token, 'Shared', simpleChatGraph);
  const shareId = (await ok(t, token, 'POST', '/support/outLink/create', { appId, type: 'share', name: 'Public' })) as string;
  return { teamId, token, share: { shareId, outLinkUid: 'visitor-1' } };
}

const text = (bytes: number) => ({ name: 'notes.txt', content: 'x'.repeat(bytes), type: 'text/plain' });
const png = (bytes: number) => ({ name: 'dot.png', content: Buffer.concat([PNG, Buffer.alloc(bytes - PNG.length)]), type: 'image/png' });

function send(url: string, fields: Record<string, string>, file: { name: string; content: Buffer | string; type: string }, headers: Record<string, string> = {}) {
  const form = multipart(fields, file);
  return t.app.inject({ method: 'POST', url: `/api/common/file/${url}`, payload: form.payload, headers: { ...form.headers, ...headers } });
}
const uploadFile = (fields: Record<string, string>, bytes: number, headers?: Record<string, string>) => send('upload', { bucketName: 'chat', ...fields }, text(bytes), headers);
const uploadImage = (fields: Record<string, string>, bytes: number, headers?: Record<string, string>) => send('uploadImage', fields, png(bytes), headers);

async function stored(teamId: string) {
  const db = t.app.mongo.db;
  const files = await db.collection('chat.files').find({ teamId: new ObjectId(teamId) }).toArray();
  const chunks = await Promise.all(files.map((file) => db.collection('chat.chunks').countDocuments({ files_id: file._id })));
  return {
    files: files.length,
    chunks: chunks.reduce((a, b) => a + b, 0),
    images: await db.collection('images').countDocuments({ teamId: new ObjectId(teamId) }),
  };
}

function expectQuotaRefusal(res: Awaited<ReturnType<typeof send>>) {
  expect(res.statusCode, res.body).toBe(429);
  expect(res.json()).toMatchObject({ code: 429, statusText: 'tooManyRequest' });
  expect(res.json().message).toMatch(new RegExp(`upload quota \\(${BOUND} bytes in 24 hours\\)`));
  const retryAfter = Number(res.headers['retry-after']);
  expect(retryAfter).toBeGreaterThan(DAY_MS / 1000 - 120);
  expect(retryAfter).toBeLessThanOrEqual(DAY_MS / 1000);
}

describe('the per-team bound on share-page and team-space uploads', () => {
  it('lets a share visitor upload up to the bound, then refuses with 429 and stores nothing, whatever visitor id is chosen', async () => {
    const { teamId, share } = await sharedTeam();
    for (let i = 0; i < 3; i++) expect((await uploadFile(share, 1200)).statusCode).toBe(200);
    const fileDoc = await t.app.mongo.db.collection('chat.files').findOne({ teamId: new ObjectId(teamId) });
    expect(fileDoc?.metadata.uploadedBy).toBe('outLink');

    const before = await stored(teamId);
    expectQuotaRefusal(await uploadFile(share, 1200));
    // The visitor id is the visitor's choice: another one is the same team's quota.
    expectQuotaRefusal(await uploadFile({ ...share, outLinkUid: 'visitor-2' }, 1200));
    expectQuotaRefusal(await uploadImage({ ...share, outLinkUid: 'visitor-3' }, 1200));
    expect(await stored(teamId)).toEqual(before);
    // What still fits is taken: the bound is on bytes.
    expect((await uploadFile(share, BOUND - 3 * 1200)).statusCode).toBe(200);
    expectQuotaRefusal(await uploadFile(share, 1));
  });

  it('counts images (multipart and base64) and team-space uploads in the same bound', async () => {
    const { teamId, share } = await sharedTeam();
    expect((await uploadImage(share, 1500)).statusCode).toBe(200);
    const base64Img = `data:image/png;base64,${png(1500).content.toString('base64')}`;
    const json = await t.app.inject({ method: 'POST', url: '/api/common/file/uploadImage', payload: { ...share, base64Img } });
    expect(json.statusCode, json.body).toBe(200);
    const image = await t.app.mongo.db.collection('images').findOne({ teamId: new ObjectId(teamId) });
    expect(image?.metadata).toMatchObject({ uploadedBy: 'outLink', size: 1500 });

    const teamSpace = { teamId, teamToken: 'any-token' };
    expect((await uploadFile(teamSpace, 1000)).statusCode).toBe(200);
    const before = await stored(teamId);
    expectQuotaRefusal(await uploadFile(teamSpace, 200));
    expectQuotaRefusal(await uploadImage(share, 200));
    const refusedJson = await t.app.inject({ method: 'POST', url: '/api/common/file/uploadImage', payload: { ...share, base64Img } });
    expectQuotaRefusal(refusedJson);
    expect(await stored(teamId)).toEqual(before);
  });

  it('refuses an upload larger than the whole bound with 413, since no wait makes room for it', async () => {
    const { teamId, share } = await sharedTeam();
    const res = await uploadFile(share, BOUND + 1);
    expect(res.statusCode, res.body).toBe(413);
    expect(res.json().message).toMatch(/larger than share-page and team-space visitors may store in this team in 24 hours \(4096 bytes\)/);
    expect(await stored(teamId)).toEqual({ files: 0, chunks: 0, images: 0 });
  });

  it('does not bound team members with a session, nor counts their uploads, even ones claiming a visitor mark', async () => {
    const { teamId, token, share } = await sharedTeam();
    const member = authHeaders(token);
    for (let i = 0; i < 3; i++) {
      const file = await uploadFile({ metadata: JSON.stringify({ uploadedBy: 'outLink' }) }, 2000, member);
      expect(file.statusCode, file.body).toBe(200);
      expect((await uploadImage({}, 2000, member)).statusCode).toBe(200);
    }
    const docs = await t.app.mongo.db.collection('chat.files').find({ teamId: new ObjectId(teamId) }).toArray();
    expect(docs.map((doc) => doc.metadata.uploadedBy)).toEqual([undefined, undefined, undefined]);
    expect((await uploadFile(share, BOUND)).statusCode).toBe(200);
  });

  it("does not count another team's visitor uploads against this team", async () => {
    const full = await sharedTeam();
    const other = await sharedTeam();
    expect((await uploadFile(full.share, BOUND)).statusCode).toBe(200);
    expectQuotaRefusal(await uploadFile(full.share, 10));
    expect((await uploadFile(other.share, BOUND - 100)).statusCode).toBe(200);
    expect((await uploadImage(other.share, 100)).statusCode).toBe(200);
    expectQuotaRefusal(await uploadImage(other.share, 100));
  });

  it('no longer counts uploads stored more than 24 hours ago', async () => {
    const { teamId, share } = await sharedTeam();
    expect((await uploadFile(share, 2500)).statusCode).toBe(200);
    expect((await uploadImage(share, 1500)).statusCode).toBe(200);
    expectQuotaRefusal(await uploadFile(share, 1000));

    const dayAgo = new Date(Date.now() - DAY_MS - 60_000);
    const team = { teamId: new ObjectId(teamId) };
    await t.app.mongo.db.collection('chat.files').updateMany(team, { $set: { uploadDate: dayAgo } });
    await t.app.mongo.db.collection('images').updateMany(team, { $set: { createTime: dayAgo } });
    expect((await uploadFile(share, 3000)).statusCode).toBe(200);
    expect((await uploadImage(share, 1000)).statusCode).toBe(200);
    // The ones left in the window count again; Retry-After is when the oldest of them leaves it.
    expectQuotaRefusal(await uploadFile(share, 200));
  });

  it('keeps no file of an upload whose app check failed after storing it (a database error), so the retry is counted once', async () => {
    const { teamId, share } = await sharedTeam();
    const { apps } = t.app;
    const confirm = apps.confirmDependentWrite;
    apps.confirmDependentWrite = async () => {
      apps.confirmDependentWrite = confirm;
      throw Object.assign(new Error('connection reset'), { name: 'MongoNetworkError' });
    };
    const failed = await uploadFile(share, 3000);
    expect(failed.statusCode, failed.body).toBeGreaterThanOrEqual(500);
    expect(await stored(teamId)).toEqual({ files: 0, chunks: 0, images: 0 });
    // Within the bound only if the failed upload counts for nothing.
    expect((await uploadFile(share, 3000)).statusCode).toBe(200);
    expect((await stored(teamId)).files).toBe(1);
  });

  it.each([
    ['chat.files', 'uploadDate'],
    ['images', 'createTime'],
  ])('%s has an index for the sums: team, mark, then time', async (collection, time) => {
    const indexes = await t.app.mongo.db.collection(collection).indexes();
    expect(indexes.map((index) => Object.keys(index.key).join(','))).toContain(`teamId,metadata.uploadedBy,${time}`);
  });
});
