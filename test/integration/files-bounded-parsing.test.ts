import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workerTaskLoad } from '../../src/infra/worker-task.js';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { type Client, client, multipart } from '../fixtures/datasets/client.js';
import { createPublishedApp, startChatApp } from './chat-helpers.js';

/**
 * User files are parsed off the main thread past a few hundred KB (docs/decisions.md, bounded
 * work): what each route did inline before is shown by whether a worker task ran, not by timing.
 */
const OUTBOUND_MAX_BYTES = 2 * 1024 * 1024;
let t: TestApp;
let fake: FakeOpenAi;
let token: string;
let api: Client;
let files: Server;
let origin: string;

function repeated(row: string, bytes: number): Buffer {
  const one = Buffer.from(row);
  const out = Buffer.alloc(Math.floor(bytes / one.length) * one.length);
  for (let at = 0; at < out.length; at += one.length) one.copy(out, at);
  return out;
}
const csvs: Record<string, Buffer> = { '/small.csv': repeated('q12345,a12345\n', 1024 * 1024), '/large.csv': repeated('q12345,a12345\n', 3 * 1024 * 1024) };

beforeAll(async () => {
  ({ t, fake } = await startChatApp(() => ({ OUTBOUND_MAX_BYTES: String(OUTBOUND_MAX_BYTES) })));
  await createUser(t, { username: 'bounded-user', password: 'password-u1' });
  token = await login(t, 'bounded-user', 'password-u1');
  api = client(t, token);
  files = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/csv' });
    res.end(csvs[req.url ?? ''] ?? '');
  });
  await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
}, 60_000);
afterAll(async () => {
  await t?.close();
  await fake?.close();
  await new Promise((resolve) => files?.close(resolve));
});

/** Whether a worker task was running at some point while `work` ran (polled: tasks last hundreds of ms). */
async function withWorkerSeen<T>(work: () => Promise<T>): Promise<{ result: T; seen: boolean }> {
  let seen = false;
  const poll = setInterval(() => {
    if (workerTaskLoad().running > 0) seen = true;
  }, 5);
  try {
    return { result: await work(), seen };
  } finally {
    clearInterval(poll);
  }
}

describe('Q/A chunk preview of a CSV whose beginning settles nothing', () => {
  it('reads the whole file in the CSV worker, not inline (an 80 MB file blocked 6 s)', async () => {
    const body = multipart({ bucketName: 'dataset' }, { name: 'one-column.csv', content: repeated('just one cell here\n', 6 * 1024 * 1024), type: 'text/csv' });
    const uploaded = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
    expect(uploaded.statusCode, uploaded.body).toBe(200);
    const { result, seen } = await withWorkerSeen(() =>
      api.post('/core/dataset/file/getPreviewChunks', { type: 'fileLocal', sourceId: uploaded.json().data.fileId, isQAImport: true, chunkSize: 512 }),
    );
    expect(result.status).toBe(400);
    expect(String(result.body.message)).toMatch(/two columns/);
    expect(seen).toBe(true);
  }, 30_000);
});

describe('readFiles node', () => {
  const graph = {
    nodes: [
      { nodeId: 'start', flowNodeType: 'workflowStart', name: 'Start', inputs: [], outputs: [{ id: 'userFiles', key: 'userFiles' }] },
      { nodeId: 'files', flowNodeType: 'readFiles', name: 'Read', inputs: [{ key: 'fileUrlList', value: ['start', 'userFiles'], valueType: 'arrayString' }], outputs: [{ id: 'system_text', key: 'system_text' }] },
      { nodeId: 'ans', flowNodeType: 'answerNode', name: 'Answer', inputs: [{ key: 'text', value: 'done' }], outputs: [] },
    ],
    edges: [
      { source: 'start', sourceHandle: 'start-source-right', target: 'files', targetHandle: 'files-target-left' },
      { source: 'files', sourceHandle: 'files-source-right', target: 'ans', targetHandle: 'ans-target-left' },
    ],
    chatConfig: {},
  };
  const readResult = async (appId: string, name: string) => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/chat/completions',
      headers: authHeaders(token),
      payload: { appId, detail: true, messages: [{ role: 'user', content: [{ type: 'text', text: 'read' }, { type: 'file_url', name, url: `${origin}/${name}` }] }] },
    });
    expect(response.statusCode, response.body).toBe(200);
    return String(response.json().responseData?.find((r: { moduleType: string }) => r.moduleType === 'readFiles')?.readFilesResult);
  };

  it('parses a CSV over 256 KB in the CSV worker; a link past OUTBOUND_MAX_BYTES is not read', async () => {
    const appId = await createPublishedApp(t, token, 'CSV reader', graph);
    const { result, seen } = await withWorkerSeen(() => readResult(appId, 'small.csv'));
    expect(result).toContain('| q12345 | a12345 |');
    expect(seen).toBe(true);
    // Before, any link was downloaded up to UPLOAD_LIMIT_BYTES (100 MB).
    expect(await readResult(appId, 'large.csv')).toContain('The file could not be read');
  }, 30_000);
});

describe('uploadImage JSON body', () => {
  it('is refused past the largest image (413) before it is parsed; a body within it is walked at once', async () => {
    const huge = `{"base64Img":"x","metadata":{"a":[${'0,'.repeat(20_000_000 - 1)}0]}}`;
    const refused = await t.app.inject({ method: 'POST', url: '/api/common/file/uploadImage', headers: { 'content-type': 'application/json' }, payload: huge });
    expect(refused.statusCode).toBe(413);
    // 12 MB of array: parsed and walked by the input guard before the 401 (6 M keys listed before).
    const within = `{"base64Img":"x","metadata":{"a":[${'0,'.repeat(6_000_000 - 1)}0]}}`;
    const anonymous = await t.app.inject({ method: 'POST', url: '/api/common/file/uploadImage', headers: { 'content-type': 'application/json' }, payload: within });
    expect(anonymous.statusCode).toBe(401);
  }, 30_000);
});
