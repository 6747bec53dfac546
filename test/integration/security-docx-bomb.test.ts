import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { type Client, client, multipart } from '../fixtures/datasets/client.js';
import { makeEmptyParagraphsDocx } from '../fixtures/files/make-fixtures.js';

/**
 * A .docx is a zip archive: a few kilobytes can unpack to gigabytes. Reading one that expands
 * past the limits is a 400 for every route that extracts text, and the process keeps answering.
 */
let t: TestApp;
let api: Client;
let token: string;

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'docx-user', password: 'password-u1' });
  token = await login(t, 'docx-user', 'password-u1');
  api = client(t, token);
});

afterAll(async () => {
  await t?.close();
});

async function upload(content: Buffer): Promise<string> {
  const body = multipart({ bucketName: 'dataset' }, { name: 'bomb.docx', content, type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' });
  const response = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
  expect(response.statusCode).toBe(200);
  return response.json().data.fileId;
}

describe('docx bombs', () => {
  it('a part declared over 50 MB: previewContent, getPreviewChunks and collection/create/fileId are 400s', async () => {
    const fileId = await upload(makeEmptyParagraphsDocx(10_000_000, { deflate: true }));
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Bombs' }));
    for (const [url, payload] of [
      ['/common/file/previewContent', { type: 'fileLocal', sourceId: fileId }],
      ['/core/dataset/file/getPreviewChunks', { type: 'fileLocal', sourceId: fileId, chunkSize: 512 }],
      ['/core/dataset/collection/create/fileId', { datasetId, fileId }],
    ] as const) {
      const response = await api.post(url, payload);
      expect(response.status, url).toBe(400);
      expect(response.body.statusText, url).toBe('missingParams');
      expect(response.body.message, url).toMatch(/^Cannot read the \.docx file 'bomb\.docx' \(entry "word\/document\.xml" unpacks to 58 MB, over the limit of 50 MB per entry\)/);
    }
  });

  it('the security review’s 10 KB file of a million empty paragraphs: /healthz answers while it is read, then a 400', async () => {
    const fileId = await upload(makeEmptyParagraphsDocx(1_000_000, { deflate: true }));
    let done = false;
    const preview = api.post('/common/file/previewContent', { type: 'fileLocal', sourceId: fileId }).finally(() => {
      done = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const health = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(done).toBe(false);
    const response = await preview;
    expect(response.status).toBe(400);
    expect(response.body.message).toMatch(/^Cannot read the \.docx file 'bomb\.docx' \(.*memory limit/);
  });
});
