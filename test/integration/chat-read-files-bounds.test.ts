import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { multipart } from '../fixtures/datasets/client.js';
import { createPublishedApp, readFilesGraph, startChatApp } from './chat-helpers.js';

/**
 * What one readFiles run reads and keeps. Twenty spellings of one upload's link
 * (`/api/xN/../common/file/read?…`) were twenty files: a 100 MB chat file was read twenty times
 * (2 GB of heap, then a 500), and every file's whole text was kept.
 */
let t: TestApp;
let fake: FakeOpenAi;
let token: string;
let appId: string;
/** Requests this service answered for its file read links (readFiles reads its own uploads through them). */
let fileReads = 0;

const CUT_NOTE = '[The text is cut here: readFiles keeps at most 1000000 characters of its files]';

/** Uploads a chat file; its relative read link, as the web client sends it. */
async function uploadChatFile(name: string, content: Buffer | string): Promise<string> {
  const body = multipart({ bucketName: 'chat', metadata: '{"chatId":"bounds"}' }, { name, content, type: 'text/plain' });
  const uploaded = await t.app.inject({ method: 'POST', url: '/api/common/file/upload', headers: { ...authHeaders(token), ...body.headers }, payload: body.payload });
  expect(uploaded.statusCode, uploaded.body).toBe(200);
  return uploaded.json().data.previewUrl as string;
}

async function readLinks(urls: string[]) {
  const files = urls.map((url, i) => ({ type: 'file_url', name: `f${i}.txt`, url }));
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/chat/completions',
    headers: authHeaders(token),
    payload: { appId, detail: true, messages: [{ role: 'user', content: [{ type: 'text', text: 'read' }, ...files] }] },
  });
  expect(response.statusCode, response.body.slice(0, 500)).toBe(200);
  const body = response.json();
  const detail = body.responseData.find((r: { moduleType: string }) => r.moduleType === 'readFiles') as { readFiles: { url: string; name: string }[]; readFilesResult: string };
  return { text: body.choices[0].message.content as string, detail };
}

beforeAll(async () => {
  ({ t, fake } = await startChatApp(undefined, (app) => {
    app.addHook('onRequest', async (request) => {
      if (request.url.startsWith('/api/common/file/read')) fileReads += 1;
    });
  }));
  await createUser(t, { username: 'read-bounds', password: 'password-r1' });
  token = await login(t, 'read-bounds', 'password-r1');
  appId = await createPublishedApp(t, token, 'File reader', readFilesGraph);
}, 60_000);

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('readFiles bounds', () => {
  it('reads a file once however its links spell it', async () => {
    const menu = await uploadChatFile('menu.txt', 'Soup of the day: lentils.');
    expect(menu.startsWith('/api/common/file/read?filename=menu.txt&token=')).toBe(true);
    const fileToken = new URL(menu, 'http://x').searchParams.get('token');
    const aliases = [
      ...Array.from({ length: 18 }, (_, i) => menu.replace('/api/common/', `/api/x${i}/../common/`)),
      `/api/common/file/read?token=${fileToken}&filename=menu.txt`,
      `/api/common/file/read?filename=other.md&token=${fileToken}`,
    ];
    fileReads = 0;
    const { text, detail } = await readLinks(aliases);
    expect(fileReads).toBe(1);
    expect(detail.readFiles).toEqual([{ url: aliases[0], name: 'menu.txt' }]);
    expect(text).toBe('\nFile: menu.txt\n<Content>\nSoup of the day: lentils.\n</Content>');
  });

  it('keeps at most 1,000,000 characters of text, saying where it cut', async () => {
    const line = 'lorem ipsum dolor sit amet consectetur adipiscing elit\n';
    const big = await uploadChatFile('big.txt', line.repeat(Math.ceil((3 * 1024 * 1024) / line.length)));
    const { text, detail } = await readLinks([big]);
    expect(text.length).toBeLessThanOrEqual(1_000_001);
    expect(text.length).toBeGreaterThan(990_000);
    expect(text.startsWith('\nFile: big.txt\n<Content>\nlorem ipsum')).toBe(true);
    expect(text.endsWith(`\n${CUT_NOTE}`)).toBe(true);
    expect(detail.readFilesResult).toBe(`File: big.txt\n<Content>\n${line.repeat(2).slice(0, 100)}......\n${CUT_NOTE}\n</Content>`);
  }, 60_000);

  it('reads no file past the cut: the detail says why', async () => {
    const big = await uploadChatFile('first.txt', 'x '.repeat(700_000));
    const small = await uploadChatFile('second.txt', 'the second file');
    fileReads = 0;
    const { text, detail } = await readLinks([big, small]);
    expect(fileReads).toBe(1);
    expect(detail.readFiles.map((file) => file.name)).toEqual(['first.txt', 'second.txt']);
    expect(text).not.toContain('second');
    expect(text.endsWith(CUT_NOTE)).toBe(true);
    expect(detail.readFilesResult).toContain(
      'File: second.txt\n<Content>\n[Not read: readFiles keeps at most 1000000 characters of its files, and the files before this one took them]\n</Content>',
    );
  }, 60_000);

  it('files within the bounds are read whole, as before', async () => {
    const one = await uploadChatFile('one.md', '# One\n\nfirst');
    const two = await uploadChatFile('two.txt', 'second');
    const { text, detail } = await readLinks([one, two, one]);
    expect(detail.readFiles.map((file) => file.name)).toEqual(['one.md', 'two.txt']);
    expect(text).toBe('\nFile: one.md\n<Content>\n# One\n\nfirst\n</Content>\n******\nFile: two.txt\n<Content>\nsecond\n</Content>');
  });
});
