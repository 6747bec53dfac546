import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { buildTestApp, type TestApp, testConfig } from '../helpers/app.js';
import { login } from '../helpers/platform.js';

/**
 * Secrets every replica must agree on: with only TOKEN_KEY set (as production requires), a file
 * link signed by one replica is honoured by another, as after a restart.
 */
let t: TestApp;
let replica: TestApp['app'];

beforeAll(async () => {
  t = await buildTestApp();
  replica = await buildApp(testConfig({ MONGODB_URI: t.config.MONGODB_URI }), { startupTasks: false });
  await replica.ready();
});

afterAll(async () => {
  await replica?.close();
  await t.close();
});

describe('signed file links across replicas (FILE_TOKEN_KEY unset)', () => {
  it('a previewUrl from one replica streams the file on the other', async () => {
    const token = await login(t, 'root', 'root-password-1');
    const boundary = 'ReplicaBoundary';
    const payload = [
      `--${boundary}\r\nContent-Disposition: form-data; name="bucketName"\r\n\r\ndataset\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="shared.txt"\r\nContent-Type: text/plain\r\n\r\nshared between replicas\r\n--${boundary}--\r\n`,
    ].join('');
    const upload = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { token, 'content-type': `multipart/form-data; boundary=${boundary}` }, payload });
    expect(upload.statusCode, upload.body).toBe(200);
    const previewUrl = upload.json().data.previewUrl as string;
    const path = previewUrl.startsWith('/api') ? previewUrl : `/api${previewUrl}`;
    const read = await replica.inject({ method: 'GET', url: path });
    expect(read.statusCode, read.body).toBe(200);
    expect(read.body).toBe('shared between replicas');
  });
});
