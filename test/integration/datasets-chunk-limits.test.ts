import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitText } from '../../src/domain/text-splitter.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { type Client, client, multipart } from '../fixtures/datasets/client.js';
import { type LocalSite, startLocalSite } from '../helpers/local-site.js';

let t: TestApp;
let api: Client;
let token: string;
let site: LocalSite;
let siteUrl: string;
let page = '';
let datasetId: string;

const sentences = (count: number, word: string) => Array.from({ length: count }, (_, i) => `${word} ${i} is one sentence.`).join(' ');

beforeAll(async () => {
  site = await startLocalSite((_req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(page);
  });
  siteUrl = site.url;
  t = await buildTestApp({ SSRF_ALLOW_PRIVATE: 'true', OUTBOUND_TIMEOUT_MS: '2000' });
  await createUser(t, { username: 'chunk-user', password: 'password-c1' });
  token = await login(t, 'chunk-user', 'password-c1');
  api = client(t, token);
  datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Chunk limits' }));
});

afterAll(async () => {
  await t?.close();
  await site?.close();
});

async function upload(name: string, content: string) {
  const body = multipart({ bucketName: 'dataset' }, { name, content, type: 'text/plain' });
  const response = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
  expect(response.statusCode, response.body).toBe(200);
  return (response.json().data as { fileId: string }).fileId;
}

describe('chunk sizes', () => {
  it('are at least 100 (the reference import page minimum): smaller ones are a 400 naming chunkSize, nothing created', async () => {
    const before = (await api.ok<{ total: number }>(api.get('/core/dataset/collection/scrollList', { datasetId }))).total;
    for (const chunkSize of [1, 64, 99, '50']) {
      const response = await api.post('/core/dataset/collection/create/text', { datasetId, name: 'tiny', text: sentences(50, 'Tiny'), chunkSize });
      expect(response.status, String(chunkSize)).toBe(400);
      expect(response.body.message).toMatch(/chunkSize.*at least 100/);
    }
    expect((await api.ok<{ total: number }>(api.get('/core/dataset/collection/scrollList', { datasetId }))).total).toBe(before);
    await api.ok(api.post('/core/dataset/collection/create/text', { datasetId, name: 'smallest', text: sentences(50, 'Small'), chunkSize: 100 }));

    const fileId = await upload('notes.txt', sentences(200, 'Note'));
    const preview = await api.post('/core/dataset/file/getPreviewChunks', { type: 'fileLocal', sourceId: fileId, chunkSize: 10 });
    expect([preview.status, preview.body.message]).toEqual([400, expect.stringMatching(/chunkSize/)]);
    const local = multipart({ data: JSON.stringify({ datasetId, chunkSize: 20 }) }, { name: 'local.txt', content: sentences(20, 'Local'), type: 'text/plain' });
    const refused = await t.app.inject({ method: 'POST', url: '/api/core/dataset/collection/create/localFile', headers: { ...authHeaders(token), ...local.headers }, payload: local.payload });
    expect([refused.statusCode, refused.json().message]).toEqual([400, expect.stringMatching(/chunkSize/)]);
  });

  it('a link collection stored with a smaller chunk size (before the minimum) is split at the minimum when synced', async () => {
    page = `<html><body><p>${sentences(100, 'First')}</p></body></html>`;
    const created = await api.ok<{ collectionId: string }>(api.post('/core/dataset/collection/create/link', { datasetId, link: `${siteUrl}/page`, chunkSize: 512 }));
    const collections = t.app.mongo.db.collection('dataset_collections');
    await collections.updateOne({ _id: new ObjectId(created.collectionId) }, { $set: { chunkSize: 20 } });
    page = `<html><body><p>${sentences(100, 'Second')}</p></body></html>`;
    expect(await api.ok(api.post('/core/dataset/collection/sync/link', { collectionId: created.collectionId }))).toBe('success');
    const replacement = await collections.findOne({ rawLink: `${siteUrl}/page` });
    const queued = await t.app.mongo.db.collection('dataset_trainings').countDocuments({ collectionId: replacement!._id });
    const text = sentences(100, 'Second');
    // Split at 100 characters, not at 20 (one chunk per sentence).
    expect(queued).toBeGreaterThan(0);
    expect(queued).toBeLessThanOrEqual(splitText({ text, chunkLen: 100 }).chunks.length);
    expect(replacement!.chunkSize).toBe(20);
  });

  it('a <1 MB table with a 400 KB header (once copied onto each of its 110,000 rows: out of memory) gives chunks about its own size', async () => {
    const text = `|${'h'.repeat(400_000)}|\n|---|\n${'|1|\n'.repeat(110_000)}`;
    const created = await api.ok<{ collectionId: string }>(api.post('/core/dataset/collection/create/text', { datasetId, name: 'wide header', text }));
    const chunks = await t.app.mongo.db.collection('dataset_trainings').find({ collectionId: new ObjectId(created.collectionId) }).project({ q: 1 }).toArray();
    expect(chunks.length).toBeGreaterThan(0);
    expect(chunks.reduce((sum, chunk) => sum + String(chunk.q).length, 0)).toBeLessThan(2 * text.length);
  });

  it('a chunkSplitter between every word gives at most one chunk per 31 characters', async () => {
    const text = Array.from({ length: 20_000 }, (_, i) => `w${i}`).join(' ');
    const created = await api.ok<{ collectionId: string }>(api.post('/core/dataset/collection/create/text', { datasetId, name: 'words', text, chunkSize: 100, chunkSplitter: ' ' }));
    const queued = await t.app.mongo.db.collection('dataset_trainings').countDocuments({ collectionId: new ObjectId(created.collectionId) });
    expect(queued).toBeGreaterThan(0);
    expect(queued).toBeLessThanOrEqual(text.length / 31 + 1);
  });

  it('getPreviewChunks answers the first chunks of the whole text', async () => {
    const text = Array.from({ length: 400 }, (_, i) => `## Part ${i}\n\n${sentences(8, `Part ${i}`)}\n`).join('\n');
    const fileId = await upload('long.md', text);
    for (const chunkSize of [100, 512]) {
      const chunks = await api.ok<{ q: string; a: string }[]>(api.post('/core/dataset/file/getPreviewChunks', { type: 'fileLocal', sourceId: fileId, chunkSize, overlapRatio: 0.2 }));
      expect(chunks).toEqual(splitText({ text, chunkLen: chunkSize, overlapRatio: 0.2 }).chunks.slice(0, 5).map((q) => ({ q, a: '' })));
    }
  });
});
