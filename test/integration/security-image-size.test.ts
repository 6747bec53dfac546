import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_IMAGE_BYTES } from '../../src/platform/datasets/files/file.service.js';
import { multipart } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';

/** Images are stored whole in one document (16 MB at most in MongoDB): the upload limit alone let bigger ones reach the database. */
let t: TestApp;
let token: string;
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'imager', password: 'password-i1' });
  token = await login(t, 'imager', 'password-i1');
});

afterAll(async () => {
  await t?.close();
});

describe('uploadImage as a file', () => {
  const send = (content: Buffer) => {
    const body = multipart({ type: 'chatImage' }, { name: 'picture.png', content, type: 'image/png' });
    return t.app.inject({ method: 'POST', url: '/api/common/file/uploadImage', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
  };

  it('refuses an image over the cap with a 413 (the database would refuse the document) and stores nothing', async () => {
    const tooBig = await send(Buffer.concat([PNG, Buffer.alloc(17 * 1024 * 1024, 0)]));
    expect(tooBig.statusCode, tooBig.body).toBe(413);
    expect(tooBig.json().message).toBe(`Image too large: at most ${MAX_IMAGE_BYTES} bytes`);
    expect(await t.app.mongo.db.collection('images').countDocuments({})).toBe(0);
    const fits = await send(Buffer.concat([PNG, Buffer.alloc(1024, 0)]));
    expect(fits.statusCode, fits.body).toBe(200);
  });
});
