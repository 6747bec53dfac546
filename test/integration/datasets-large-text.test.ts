import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { type CommandStartedEvent, type CommandSucceededEvent, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitText } from '../../src/domain/text-splitter.js';
import { htmlToMarkdown } from '../../src/infra/html-to-markdown.js';
import { normalizeExtractedText } from '../../src/infra/text-extract.js';
import { MAX_RUNNING_WORKER_TASKS, runWorkerTask, workerTaskLoad } from '../../src/infra/worker-task.js';
import { simpleText } from '../../src/platform/datasets/data/data-indexes.js';
import { previewChunks } from '../../src/platform/datasets/files/preview-chunks.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { type LocalSite, startLocalSite } from '../helpers/local-site.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { type Client, client, multipart } from '../fixtures/datasets/client.js';
import { markdownOf } from '../fixtures/datasets/large-text.js';

/**
 * Large texts are read, split and hashed off the event loop (files/large-text.ts): the same chunks
 * as the domain splitter gives inline, while other requests are answered. Whether the event loop
 * turned is judged by the order of events, never by timings.
 */

let t: TestApp;
let api: Client;
let token: string;
let origin: string;
let site: LocalSite;
let datasetId: string;
const pages: Record<string, string> = {};

beforeAll(async () => {
  site = await startLocalSite((req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(pages[req.url ?? ''] ?? '');
  });
  t = await buildTestApp({ SSRF_ALLOW_PRIVATE: 'true' });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  await createUser(t, { username: 'large-text-user', password: 'password-u1' });
  token = await login(t, 'large-text-user', 'password-u1');
  api = client(t, token);
  datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Large texts' }));
}, 60_000);
afterAll(async () => {
  await t?.close();
  await site?.close();
});

/** A worker that holds its slot until the test lets it go. */
const HOLDING_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
Atomics.wait(new Int32Array(workerData), 0, 0);
parentPort.postMessage('let go');
`;

/**
 * Starts `request` while every worker slot is held, and tells whether it queued a worker task (its
 * work then waits for a slot, off this thread) or was answered without one (inline). The slots
 * are let go before this returns; `answer` is the request's.
 */
async function queuedForWorker<T>(request: () => Promise<T>): Promise<{ outcome: string; answer: Promise<T> }> {
  const gate = new Int32Array(new SharedArrayBuffer(4));
  const held = Array.from({ length: MAX_RUNNING_WORKER_TASKS }, () => runWorkerTask(HOLDING_WORKER, { eval: true, workerData: gate.buffer }, 120_000, { owner: 'holder' }));
  let answered = false;
  const answer = request();
  const settled = () => {
    answered = true;
  };
  answer.then(settled, settled);
  try {
    while (!answered && workerTaskLoad().waiting === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    return { outcome: answered ? 'answered inline' : 'queued for a worker', answer };
  } finally {
    Atomics.store(gate, 0, 1);
    Atomics.notify(gate, 0);
    await Promise.all(held);
  }
}

async function upload(name: string, content: string): Promise<string> {
  const body = multipart({ bucketName: 'dataset' }, { name, content, type: 'text/plain' });
  const response = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data.fileId;
}

type Item = { q: string; chunkIndex: number };
type Results = { insertLen: number; overToken: Item[]; repeat: Item[]; error: Item[] };

/** Every chunk an import made, by index, as the queue stores its q: the queued items, and those it refused (in the answer). */
async function importedChunks(collectionId: string, results: Results): Promise<string[]> {
  const queued = await t.app.mongo.db
    .collection<Item>('dataset_trainings')
    .find({ collectionId: new ObjectId(collectionId) }, { projection: { q: 1, chunkIndex: 1 } })
    .toArray();
  expect(queued).toHaveLength(results.insertLen);
  const all = [...queued, ...results.overToken, ...results.repeat, ...results.error].sort((a, b) => a.chunkIndex - b.chunkIndex);
  return all.map((item) => simpleText(item.q));
}

/** The domain splitter on the text, inline, as the queue stores each chunk. */
const inlineChunks = (text: string, chunkLen: number) => splitText({ text, chunkLen, overlapRatio: 0.2 }).chunks.map((chunk) => simpleText(chunk));

/**
 * The order of the database commands the app sends and answers, and of /healthz answers, while
 * `run` runs; /healthz is asked over a real socket again and again meanwhile, so an answer needs
 * the event loop to turn (a request through `inject` would not).
 */
async function orderDuring<T>(run: () => Promise<T>): Promise<{ result: T; events: string[] }> {
  const events: string[] = [];
  const targets = new Map<number, string>();
  const sent = (event: CommandStartedEvent) => {
    const target = String(event.command.collection ?? event.command[event.commandName]);
    targets.set(event.requestId, target);
    events.push(`sent ${event.commandName} ${target}`);
  };
  const answered = (event: CommandSucceededEvent) => events.push(`answered ${event.commandName} ${targets.get(event.requestId)}`);
  const mongo = t.app.mongo.client;
  mongo.on('commandStarted', sent);
  mongo.on('commandSucceeded', answered);
  let running = true;
  const checks = (async () => {
    while (running) {
      const response = await fetch(`${origin}/healthz`);
      await response.text();
      events.push(`healthz ${response.status}`);
      // Asked back to back, /healthz took much of the event loop from the work it watches (the
      // import then took twice as long); paced, hundreds still land in the window checked below.
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  try {
    return { result: await run(), events };
  } finally {
    running = false;
    await checks;
    mongo.off('commandStarted', sent);
    mongo.off('commandSucceeded', answered);
  }
}

describe('importing a text file of several MB', () => {
  // Past every bound the import crosses (the inline size, a worker page's characters, an enqueue
  // turn's characters) many times, in over 5,000 chunks. Its size costs the test little itself:
  // each chunk is a queue insert and a read back (24 MB, 21,000 chunks, took 24 s).
  const text = markdownOf(7 * 1024 * 1024);
  const chunkSize = 3000;

  it('queues the chunks the domain splitter gives, and /healthz is answered between reading the file and the next database command', async () => {
    const fileId = await upload('large.md', text);
    // Queued for a worker (the /healthz order below alone passed with the split inline too).
    const run = await queuedForWorker(() => orderDuring(() => api.post('/core/dataset/collection/create/fileId', { datasetId, fileId, chunkSize })));
    expect(run.outcome).toBe('queued for a worker');
    const { result, events } = await run.answer;
    expect(result.status, result.raw.slice(0, 500)).toBe(200);

    // The file is read from GridFS ('dataset.chunks'); the next command comes after the split. Inline, the
    // split held the event loop from one to the other: no /healthz was answered in between.
    const lastRead = events.findLastIndex((event) => event.startsWith('answered') && event.endsWith(' dataset.chunks'));
    const nextCommand = events.findIndex((event, at) => at > lastRead && event.startsWith('sent '));
    expect(lastRead).toBeGreaterThanOrEqual(0);
    expect(nextCommand).toBeGreaterThan(lastRead);
    expect(events.slice(lastRead, nextCommand).filter((event) => event === 'healthz 200').length).toBeGreaterThan(0);

    const { collectionId, results } = result.body.data as { collectionId: string; results: Results };
    const expected = inlineChunks(normalizeExtractedText(text), chunkSize);
    expect(expected.length).toBeGreaterThan(5000);
    expect(await importedChunks(collectionId, results)).toEqual(expected);
    const collection = await api.ok<{ hashRawText: string; rawTextLength: number }>(api.get('/core/dataset/collection/detail', { id: collectionId }));
    expect(collection).toMatchObject({ hashRawText: createHash('sha256').update(normalizeExtractedText(text)).digest('hex'), rawTextLength: normalizeExtractedText(text).length });
  }, 300_000);
});

describe('web pages whose text is past the inline size', () => {
  it('are split in a worker, into the chunks of their text, for imports and previews', async () => {
    // Under 256 KB of HTML (converted inline), over 256 K characters of Markdown (absolute links).
    const html = `<html><body>${Array.from({ length: 3000 }, (_, i) => `<p>Step ${i} says <a href=s${i}>see</a> and <img src=i${i}> then. More ${i}.</p>`).join('')}</body></html>`;
    pages['/pages/large'] = html;
    const link = `${site.url}/pages/large`;
    const text = htmlToMarkdown(html, { selector: 'body', baseUrl: link }).markdown.trim();
    expect(html.length).toBeLessThan(256 * 1024);
    expect(text.length).toBeGreaterThan(256 * 1024);

    const created = await queuedForWorker(() => api.ok<{ collectionId: string; results: Results }>(api.post('/core/dataset/collection/create/link', { datasetId, link, chunkSize: 512 })));
    expect(created.outcome).toBe('queued for a worker');
    const { collectionId, results } = await created.answer;
    expect(await importedChunks(collectionId, results)).toEqual(inlineChunks(text, 512));

    const preview = await queuedForWorker(() => api.ok<{ q: string }[]>(api.post('/core/dataset/file/getPreviewChunks', { type: 'link', sourceId: link, chunkSize: 512, overlapRatio: 0.2 })));
    expect(preview.outcome).toBe('queued for a worker');
    expect((await preview.answer).map((chunk) => chunk.q)).toEqual(previewChunks(text, { chunkLen: 512, overlapRatio: 0.2, customReg: [] }));
  }, 120_000);
});

describe('previews of a large text file', () => {
  it('show its beginning and length, read in a worker', async () => {
    const text = markdownOf(1024 * 1024);
    const fileId = await upload('preview.md', text);
    const preview = await queuedForWorker(() => api.ok<{ previewContent: string; totalLength: number }>(api.post('/common/file/previewContent', { type: 'fileLocal', sourceId: fileId })));
    expect(preview.outcome).toBe('queued for a worker');
    expect(await preview.answer).toEqual({ previewContent: text.slice(0, 3000), totalLength: text.length });
  }, 60_000);

  it('cut its first chunks in a worker when its beginning settles nothing', async () => {
    // Over 5% control characters in its first megabyte, but not in the whole: only the whole file answers.
    const controls = Array.from({ length: 20_000 }, (_, i) => `line ${i}\u0001\u0001\u0001 of a log`).join('\n');
    const text = `${controls}\n\n${markdownOf(2 * 1024 * 1024)}`;
    const fileId = await upload('controls.md', text);
    const preview = await queuedForWorker(() =>
      api.ok<{ q: string; a: string }[]>(api.post('/core/dataset/file/getPreviewChunks', { type: 'fileLocal', sourceId: fileId, chunkSize: 512, overlapRatio: 0.2 })),
    );
    expect(preview.outcome).toBe('queued for a worker');
    const chunks = await preview.answer;
    expect(chunks).toEqual(previewChunks(normalizeExtractedText(text), { chunkLen: 512, overlapRatio: 0.2, customReg: [] }).map((q) => ({ q, a: '' })));
    expect(chunks).toHaveLength(5);
  }, 60_000);
});
