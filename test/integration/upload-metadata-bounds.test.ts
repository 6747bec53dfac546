import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { multipart } from '../fixtures/datasets/client.js';

/**
 * Upload metadata is stored as given, so what no database must take is refused first (a 400
 * naming the field), and a file whose document could not be written leaves no chunks behind:
 * nothing else (quota, sweep) counts chunks without their file.
 */
let t: TestApp;
let token: string;

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'meta-owner', password: 'password-1' });
  token = await login(t, 'meta-owner', 'password-1');
});
afterAll(() => t.close());

const chunks = () => t.app.mongo.db.collection('chat.chunks');
const upload = (metadataJson: string) => {
  const body = multipart({ bucketName: 'chat', metadata: metadataJson }, { name: 'note.txt', content: 'x'.repeat(300_000), type: 'text/plain' });
  return t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
};

describe('upload metadata', () => {
  it('a number JSON cannot hold as a finite value (1e400) is a 400 naming its field, and stores nothing', async () => {
    const before = await chunks().countDocuments();
    for (const metadata of ['{"n":1e400}', '{"deep":{"list":[1,-1e400]}}']) {
      const res = await upload(metadata);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().message).toMatch(/Invalid field 'metadata\.(n|deep\.list\.1)': must be a finite number/);
    }
    expect(await chunks().countDocuments()).toBe(before);
  });

  it('an unpaired surrogate in a key or more than 1000 keys is a 400 naming the field, and stores nothing; one in a value is stored as U+FFFD', async () => {
    const before = await chunks().countDocuments();
    const many = JSON.stringify({ tags: Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`t${i}`, i])) });
    const cases: [string, RegExp][] = [
      ['{"\\udc00":1}', /^Invalid field 'metadata': must be well-formed Unicode text/],
      [many, /^Invalid field 'metadata': more than 1000 keys/],
    ];
    for (const [metadata, message] of cases) {
      const res = await upload(metadata);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().message).toMatch(message);
    }
    expect(await chunks().countDocuments()).toBe(before);
    expect((await upload('{"mood":"\\ud83d\\ude00"}')).statusCode).toBe(200);
    const mended = await upload('{"note":"a\\ud800"}');
    expect(mended.statusCode).toBe(200);
    expect(await t.app.mongo.db.collection('chat.files').countDocuments({ 'metadata.note': 'a\ufffd' })).toBe(1);
  });

  it('a file document the database refuses takes its chunks with it', async () => {
    // A unique index on a metadata field: the second upload's file document is a duplicate,
    // written after its chunks (on MongoDB and FerretDB alike).
    await t.app.mongo.db.collection('chat.files').createIndex({ 'metadata.ticket': 1 }, { unique: true, sparse: true, name: 'zz_ticket' });
    try {
      expect((await upload('{"ticket":"t-1"}')).statusCode).toBe(200);
      const before = await chunks().countDocuments();
      const refused = await upload('{"ticket":"t-1"}');
      expect(refused.statusCode).toBeGreaterThanOrEqual(400);
      expect(await chunks().countDocuments()).toBe(before);
    } finally {
      await t.app.mongo.db.collection('chat.files').dropIndex('zz_ticket');
    }
  });
});
