import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client, multipart } from '../fixtures/datasets/client.js';
import { deleteUnusedDatasetFiles, FIRST_SWEEP_WINDOW_MS } from '../../src/platform/datasets/files/files-sweep.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';

/**
 * Files uploaded to the `dataset` bucket and never imported into a collection are deleted by an
 * hourly sweep once two hours old (as the reference's housekeeping); a file a collection uses,
 * or one younger than that, stays.
 */
let t: TestApp;
let api: Client;
let token: string;
let stranger: string;

const HOUR = 60 * 60_000;
const later = (ms: number) => new Date(Date.now() + ms);

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'uploader', password: 'password-u1' });
  await createUser(t, { username: 'other-uploader', password: 'password-u2' });
  token = await login(t, 'uploader', 'password-u1');
  stranger = await login(t, 'other-uploader', 'password-u2');
  api = client(t, token);
});

afterAll(async () => {
  await t?.close();
});

async function upload(as: string, name: string): Promise<string> {
  const body = multipart({ bucketName: 'dataset' }, { name, content: `The content of ${name}.`, type: 'text/plain' });
  const response = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(as), ...body.headers }, payload: body.payload });
  expect(response.statusCode).toBe(200);
  return (response.json().data as { fileId: string }).fileId;
}

const stored = async (ids: string[]) =>
  (
    await t.app.mongo.db
      .collection('dataset.files')
      .find({ _id: { $in: ids.map((id) => new ObjectId(id)) } })
      .toArray()
  ).map((doc) => String(doc._id));

const sweep = (now: Date, windowMs?: number) => deleteUnusedDatasetFiles(t.app.datasets.ctx, now, windowMs);

describe('unused dataset files', () => {
  it('go two hours after upload; files collections use, and younger ones, stay', async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Imports' }));
    const unused = await upload(token, 'never-imported.txt');
    const imported = await upload(token, 'imported.txt');
    const strangers = await upload(stranger, 'someone-elses.txt');
    await api.ok(api.post('/core/dataset/collection/create/fileId', { datasetId, fileId: imported }));
    const all = [unused, imported, strangers];

    // Within the grace period nothing goes.
    expect(await sweep(later(HOUR))).toBe(0);
    expect((await stored(all)).sort()).toEqual([...all].sort());

    expect(await sweep(later(3 * HOUR))).toBe(2);
    expect(await stored(all)).toEqual([imported]);
    // The imported file's chunks are there still: the collection reads it.
    expect(await t.app.mongo.db.collection('dataset.chunks').countDocuments({ files_id: new ObjectId(imported) })).toBe(1);
    expect(await t.app.mongo.db.collection('dataset.chunks').countDocuments({ files_id: new ObjectId(unused) })).toBe(0);
  });

  it('a sweep looks back over its window only; a process’s first sweep looks a week back', async () => {
    const old = await upload(token, 'uploaded-while-no-process-ran.txt');
    // Ten hours later the hourly window (6 h to 2 h) has passed it.
    expect(await sweep(later(10 * HOUR))).toBe(0);
    expect(await stored([old])).toEqual([old]);
    expect(await sweep(later(10 * HOUR), FIRST_SWEEP_WINDOW_MS)).toBe(1);
    expect(await stored([old])).toEqual([]);
  });
});
