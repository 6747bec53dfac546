import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { type Client, client, multipart } from '../fixtures/datasets/client.js';

/** Stored files never run as pages of our origin, and hostile upload inputs are 400s, never 500s. */
let t: TestApp;
let api: Client;
let token: string;
let teamId: string;

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
const SVG = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script></svg>';

beforeAll(async () => {
  t = await buildTestApp({ UPLOAD_LIMIT_BYTES: '100000' });
  ({ teamId } = await createUser(t, { username: 'files-user', password: 'password-u1' }));
  token = await login(t, 'files-user', 'password-u1');
  api = client(t, token);
});

afterAll(async () => {
  await t?.close();
});

async function upload(file: { name: string; content: Buffer | string; type?: string }, fields: Record<string, string> = { bucketName: 'dataset' }) {
  const body = multipart(fields, file);
  const response = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
  return { status: response.statusCode, json: response.json(), payloadLength: body.payload.length };
}

const imageCount = () => t.app.mongo.db.collection('images').countDocuments({});
const fileCount = () => t.app.mongo.db.collection('dataset.files').countDocuments({});

describe('uploadImage accepts raster images only, judged by their bytes', () => {
  it('refuses an SVG data URI (stored XSS) with 400 and stores nothing', async () => {
    const before = await imageCount();
    for (const base64Img of [
      `data:image/svg+xml;base64,${Buffer.from(SVG).toString('base64')}`,
      // Declared as PNG, but the bytes are SVG.
      `data:image/png;base64,${Buffer.from(SVG).toString('base64')}`,
      `data:text/html;base64,${Buffer.from('<html><script>alert(1)</script></html>').toString('base64')}`,
    ]) {
      const response = await api.post('/common/file/uploadImage', { base64Img, type: 'chatImage' });
      expect(response.status, base64Img.slice(0, 30)).toBe(400);
      expect(response.body.message).toContain('base64Img');
    }
    const body = multipart({ type: 'chatImage' }, { name: 'x.svg', content: SVG, type: 'image/svg+xml' });
    const multipartSvg = await t.app.inject({ method: 'POST', url: '/api/common/file/uploadImage', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
    expect(multipartSvg.statusCode).toBe(400);
    expect(await imageCount()).toBe(before);
  });

  it('round-trips a PNG as image/png with nosniff, whatever type was declared', async () => {
    for (const declared of ['image/png', 'image/svg+xml']) {
      const url = await api.ok<string>(api.post('/common/file/uploadImage', { base64Img: `data:${declared};base64,${PNG.toString('base64')}`, type: 'datasetAvatar' }));
      expect(url).toMatch(/^\/api\/system\/img\/[0-9a-f]{24}\.png$/);
      const image = await t.app.inject({ method: 'GET', url });
      expect(image.statusCode).toBe(200);
      expect(image.headers['content-type']).toBe('image/png');
      expect(image.headers['x-content-type-options']).toBe('nosniff');
      expect(image.rawPayload.equals(PNG)).toBe(true);
    }
  });

  it('names each image with a random id: one stored image tells nothing of the next (public URLs could be counted back otherwise)', async () => {
    const upload = () => api.ok<string>(api.post('/common/file/uploadImage', { base64Img: `data:image/png;base64,${PNG.toString('base64')}`, type: 'chatImage' }));
    const [first = '', second = ''] = [await upload(), await upload()].map((url) => url.slice('/api/system/img/'.length, -'.png'.length));
    // An ObjectId of one process shares its 5 middle bytes with the next and counts up by one.
    expect(first.slice(8, 18)).not.toBe(second.slice(8, 18));
    expect(Number.parseInt(second.slice(18), 16) - Number.parseInt(first.slice(18), 16)).not.toBe(1);
  });

  it('serves an SVG stored before the fix as a download, never as image/svg+xml', async () => {
    const id = await t.app.datasets.ctx.repos.files.insertImage({ teamId, binary: Buffer.from(SVG), mime: 'image/svg+xml', type: 'chatImage' });
    const image = await t.app.inject({ method: 'GET', url: `/api/system/img/${id}.svg` });
    expect(image.statusCode).toBe(200);
    expect(image.headers['content-type']).toBe('application/octet-stream');
    expect(image.headers['content-disposition']).toMatch(/^attachment/);
    expect(image.headers['x-content-type-options']).toBe('nosniff');
  });
});

describe('stored files are served safely', () => {
  it('an uploaded HTML file does not come back as an HTML page of our origin', async () => {
    const uploaded = await upload({ name: 'page.html', content: '<html><body><script>alert(1)</script></body></html>', type: 'text/html' });
    expect(uploaded.status).toBe(200);
    const read = await t.app.inject({ method: 'GET', url: uploaded.json.data.previewUrl });
    expect(read.statusCode).toBe(200);
    expect(read.headers['x-content-type-options']).toBe('nosniff');
    const type = String(read.headers['content-type']);
    const disposition = String(read.headers['content-disposition']);
    expect(type).not.toContain('html');
    expect(type.startsWith('text/plain') || disposition.startsWith('attachment')).toBe(true);
  });

  it('a file stored with an active type is a download', async () => {
    const fileId = await t.app.datasets.ctx.repos.files.upload('dataset', { buffer: Buffer.from('<svg/>'), filename: 'legacy.svg', contentType: 'image/svg+xml', metadata: { teamId, tmbId: teamId } });
    const { signFileToken, fileReadUrl } = await import('../../src/platform/datasets/files/file-token.js');
    const url = fileReadUrl(signFileToken(t.config.FILE_TOKEN_KEY, { bucketName: 'dataset', teamId, tmbId: teamId, fileId }));
    const read = await t.app.inject({ method: 'GET', url });
    expect(read.headers['content-disposition']).toMatch(/^attachment/);
    expect(read.headers['x-content-type-options']).toBe('nosniff');
  });

  it('an encoding sent in the upload metadata does not reach the Content-Type header', async () => {
    const uploaded = await upload({ name: 'notes.txt', content: 'plain words' }, { bucketName: 'dataset', metadata: JSON.stringify({ encoding: 'utf-7' }) });
    const read = await t.app.inject({ method: 'GET', url: uploaded.json.data.previewUrl });
    expect(read.headers['content-type']).toBe('text/plain; charset=utf-8');
  });

  it('exportAll CSV carries nosniff', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Export' }));
    const response = await t.app.inject({ method: 'GET', url: `/api/core/dataset/exportAll?datasetId=${datasetId}`, headers: authHeaders(token) });
    expect(response.statusCode).toBe(200);
    expect(response.headers['x-content-type-options']).toBe('nosniff');
  });
});

describe('hostile upload inputs are 400s naming the field', () => {
  it('previewContent and getPreviewChunks with a non-hex sourceId', async () => {
    for (const url of ['/common/file/previewContent', '/core/dataset/file/getPreviewChunks']) {
      const response = await api.post(url, { type: 'fileLocal', sourceId: 'not-a-file-id' });
      expect(response.status, url).toBe(400);
      expect(response.body.message).toContain('sourceId');
    }
  });

  it('upload metadata keys with "." or "$" are refused by name, nothing stored', async () => {
    const before = await fileCount();
    for (const [metadata, key] of [
      [{ 'a.b': 1 }, 'a.b'],
      [{ $where: 'x' }, '$where'],
      [{ nested: { 'x.y': 1 } }, 'x.y'],
    ] as const) {
      const response = await upload({ name: 'm.txt', content: 'meta' }, { bucketName: 'dataset', metadata: JSON.stringify(metadata) });
      expect(response.status).toBe(400);
      expect(response.json.message).toContain(key);
    }
    const nestedArrays = await upload({ name: 'm.txt', content: 'meta' }, { bucketName: 'dataset', metadata: JSON.stringify({ rows: [[1, 2]] }) });
    expect(nestedArrays.status).toBe(400);
    expect(await fileCount()).toBe(before);
    expect((await upload({ name: 'm.txt', content: 'meta' }, { bucketName: 'dataset', metadata: JSON.stringify({ chatId: 'c1', tags: ['a'] }) })).status).toBe(200);
  });

  it('collection metadata (user data) keeps keys with "." and "$" as sent', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Meta' }));
    const metadata = { 'source.url': 'https://example.com', $price: 3, deep: { 'a.b': [1, 2] } };
    const created = await api.ok<{ collectionId: string }>(api.post('/core/dataset/collection/create/text', { datasetId, name: 'm', text: 'Some text.', metadata }));
    const detail = await api.ok<{ metadata: unknown }>(api.get('/core/dataset/collection/detail', { id: created.collectionId }));
    expect(detail.metadata).toEqual(metadata);
  });

  it('a NUL in a file name or in extracted text is removed before storing', async () => {
    const named = await upload({ name: 'bad%00name.txt', content: 'named file text' });
    expect(named.status).toBe(200);
    const stored = await t.app.mongo.db.collection('dataset.files').findOne({ filename: 'badname.txt' });
    expect(stored).not.toBeNull();

    // UTF-16 text may decode to NUL characters.
    const sentence = 'Words\u0000between\u0000nulls in a longer paragraph of ordinary text that is read from the file.';
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(sentence, 'utf16le')]);
    const { fileId } = (await upload({ name: 'wide.txt', content: utf16 })).json.data as { fileId: string };
    const preview = await api.ok<{ previewContent: string }>(api.post('/common/file/previewContent', { type: 'fileLocal', sourceId: fileId }));
    expect(preview.previewContent).toBe(sentence.replaceAll('\u0000', ''));
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Nul' }));
    await api.ok(api.post('/core/dataset/collection/create/fileId', { datasetId, fileId }));
    await t.app.datasets.trainingWorker.drain();
    const data = await t.app.mongo.db.collection('dataset_datas').find({}).toArray();
    expect(data.length).toBeGreaterThan(0);
    for (const item of data) expect(JSON.stringify(item)).not.toContain('\\u0000');
  });

  it('a dataset read URL that the web client opens must be http(s)', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'External' }));
    const refused = await api.put('/core/dataset/update', { id: datasetId, externalReadUrl: 'javascript:alert(document.cookie)//{{fileId}}' });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toContain('externalReadUrl');
    const unparseable = await api.put('/core/dataset/update', { id: datasetId, externalReadUrl: 'https://files.exa[mple.com/read?id={{fileId}}' });
    expect([unparseable.status, unparseable.body.message]).toEqual([400, expect.stringContaining('externalReadUrl')]);
    const site = await api.put('/core/dataset/update', { id: datasetId, websiteConfig: { url: 'https://docs.example.com:70000/', selector: 'body' } });
    expect([site.status, site.body.message]).toEqual([400, expect.stringContaining('websiteConfig.url')]);
    await api.ok(api.put('/core/dataset/update', { id: datasetId, externalReadUrl: 'https://files.example.com/read?id={{fileId}}' }));
    expect((await api.ok<{ externalReadUrl: string }>(api.get('/core/dataset/detail', { id: datasetId }))).externalReadUrl).toBe('https://files.example.com/read?id={{fileId}}');
  });

  it('a NUL in the localFile data field is refused by name', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Local' }));
    const body = multipart({ data: JSON.stringify({ datasetId, chunkSplitter: 'a\u0000b' }) }, { name: 'local.txt', content: 'Local text.' });
    const response = await t.app.inject({ method: 'POST', url: '/api/core/dataset/collection/create/localFile', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
    expect(response.statusCode).toBe(400);
    expect(response.json().message).toContain('chunkSplitter');
  });

  it('a truncated multipart body is a 400 and stores nothing', async () => {
    const before = await fileCount();
    const body = multipart({ bucketName: 'dataset' }, { name: 'cut.txt', content: 'x'.repeat(2000) });
    for (const cut of [body.payload.length - 1500, body.payload.length - 40]) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/common/file/upload',
        headers: { ...authHeaders(token), ...body.headers },
        payload: body.payload.subarray(0, cut),
      });
      expect(response.statusCode, response.body).toBe(400);
    }
    const image = multipart({ type: 'chatImage' }, { name: 'cut.png', content: Buffer.concat([PNG, Buffer.alloc(2000)]) });
    const truncatedImage = await t.app.inject({
      method: 'POST',
      url: '/api/common/file/uploadImage',
      headers: { ...authHeaders(token), ...image.headers },
      payload: image.payload.subarray(0, image.payload.length - 1000),
    });
    expect(truncatedImage.statusCode).toBe(400);
    expect(await fileCount()).toBe(before);
  });
});

describe("a teammate's upload is not anyone's to attach", () => {
  it('collection/create and create/fileId take only files the caller uploaded (the team owner any team file); nothing is created otherwise', async () => {
    await createUser(t, { username: 'files-writer', password: 'password-w1', teamId, role: 'member' });
    await createUser(t, { username: 'files-uploader', password: 'password-p1', teamId, role: 'member' });
    const writer = client(t, await login(t, 'files-writer', 'password-w1'));
    const uploaderToken = await login(t, 'files-uploader', 'password-p1');
    // A dataset every member may write; the uploader's file holds text the writer must not read.
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Shared' }));
    await api.ok(api.post('/core/dataset/update', { id: datasetId, defaultPermission: 6 }));
    const body = multipart({ bucketName: 'dataset' }, { name: 'salaries.txt', content: 'Private figures.' });
    const uploaded = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(uploaderToken), ...body.headers }, payload: body.payload });
    const fileId = (uploaded.json().data as { fileId: string }).fileId;
    const collectionCount = () => t.app.mongo.db.collection('dataset_collections').countDocuments({ datasetId: { $exists: true }, name: 'stolen' });
    const before = await collectionCount();
    for (const [path, payload] of [
      ['/core/dataset/collection/create', { datasetId, name: 'stolen', type: 'file', fileId }],
      ['/core/dataset/collection/create/fileId', { datasetId, name: 'stolen', fileId, trainingType: 'chunk' }],
    ] as const) {
      const refused = await writer.post(path, payload);
      expect(refused.status, JSON.stringify(refused.body)).toBe(403);
      expect(refused.body.message).toContain('Only the uploader');
    }
    expect(await collectionCount()).toBe(before);
    // The writer may write the dataset: a collection of its own goes in.
    expect(await writer.ok<string>(writer.post('/core/dataset/collection/create', { datasetId, name: 'writer text', type: 'virtual' }))).toMatch(/^[0-9a-f]{24}$/);
    // The uploader attaches it; so may the team owner.
    const uploader = client(t, uploaderToken);
    expect(await uploader.ok<string>(uploader.post('/core/dataset/collection/create', { datasetId, name: 'own file', type: 'file', fileId }))).toMatch(/^[0-9a-f]{24}$/);
    expect(await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'owner attaches', type: 'file', fileId }))).toMatch(/^[0-9a-f]{24}$/);
  });

  it("an external file id fills the read URL as text ($' and $& stay as they are)", async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'External ids' }));
    await api.ok(api.put('/core/dataset/update', { id: datasetId, externalReadUrl: 'https://files.example.com/read?id={{fileId}}&v=1' }));
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'odd id', type: 'externalFile', externalFileId: "a$'b$&c" }));
    const read = await api.ok<{ value: string }>(api.get('/core/dataset/collection/read', { collectionId }));
    expect(read.value).toBe("https://files.example.com/read?id=a$'b$&c&v=1");
  });
});
