/**
 * A simple app's form (the reference's AppSimpleEditFormType: aiSettings, dataset,
 * selectedTools, chatConfig) accepted instead of nodes on create, update and publish; the
 * server builds the nodes the reference's editor would, and chat runs them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { call, ok } from './apps-helpers.js';
import { startChatApp } from './chat-helpers.js';
import { ranNodes, responseOf } from './workflow-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let tok: string;

const completions = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(tok), payload });
const lastSystemPrompt = () =>
  (fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!.body as { messages: { role: string; content: string }[] }).messages.find((m) => m.role === 'system')?.content;
type Node = { nodeId: string; flowNodeType: string; pluginId?: string; inputs: { key: string; value?: unknown }[] };
const inputOf = (node: Node | undefined, key: string) => node?.inputs.find((i) => i.key === key)?.value;

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'former', password: 'password-f1' });
  tok = await login(t, 'former', 'password-f1');
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('simple app forms', () => {
  it('create, publish and update with a form build the AI chat workflow chat runs', async () => {
    const appId = (await ok(t, tok, 'POST', '/core/app/create', {
      name: 'Form bot',
      type: 'simple',
      aiSettings: { model: 'fake-llm', systemPrompt: 'Be kind.', temperature: 0, maxHistories: 2 },
      chatConfig: { welcomeText: 'Welcome!' },
    })) as string;
    const detail = await ok(t, tok, 'GET', '/core/app/detail', { appId });
    const chat = (detail.modules as Node[]).find((n) => n.flowNodeType === 'chatNode');
    expect(chat?.nodeId).toBe('7BdojPlukIQw');
    expect(inputOf(chat, 'userChatInput')).toEqual(['workflowStartNodeId', 'userChatInput']);
    expect(inputOf(chat, 'history')).toBe(2);
    expect(detail.edges).toEqual([{ source: 'workflowStartNodeId', sourceHandle: 'workflowStartNodeId-source-right', target: '7BdojPlukIQw', targetHandle: '7BdojPlukIQw-target-left' }]);

    let res = await completions({ appId, detail: true, messages: [{ role: 'user', content: 'hi' }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(ranNodes(res.json())).toEqual(['workflowStartNodeId', '7BdojPlukIQw']);
    expect(lastSystemPrompt()).toBe('Be kind.');

    await ok(t, tok, 'POST', `/core/app/version/publish?appId=${appId}`, { type: 'simple', isPublish: true, aiSettings: { model: 'fake-llm', systemPrompt: 'Be brief.' }, chatConfig: {} });
    res = await completions({ appId, detail: true, messages: [{ role: 'user', content: 'hi' }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(lastSystemPrompt()).toBe('Be brief.');

    await ok(t, tok, 'POST', '/core/app/update', { appId, aiSettings: { model: 'fake-llm', systemPrompt: 'Draft prompt.' } });
    const draft = await ok(t, tok, 'GET', '/core/app/detail', { appId });
    expect(inputOf((draft.modules as Node[]).find((n) => n.flowNodeType === 'chatNode'), 'systemPrompt')).toBe('Draft prompt.');
  });

  it("the question's images reach a vision model (the form turns vision on), uploads inlined", async () => {
    const appId = (await ok(t, tok, 'POST', '/core/app/create', { name: 'Vision bot', type: 'simple', aiSettings: { model: 'fake-llm' } })) as string;
    const boundary = '----img';
    const upload = await t.app.inject({
      method: 'POST',
      url: '/api/common/file/upload',
      headers: { token: tok, 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: [
        `--${boundary}\r\nContent-Disposition: form-data; name="bucketName"\r\n\r\nchat\r\n`,
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="dot.png"\r\nContent-Type: image/png\r\n\r\nPNGDATA\r\n`,
        `--${boundary}--\r\n`,
      ].join(''),
    });
    expect(upload.statusCode, upload.body).toBe(200);
    const { previewUrl } = upload.json().data as { previewUrl: string };
    const res = await completions({
      appId,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image_url', image_url: { url: 'https://images.example/cat.png' } },
            { type: 'image_url', image_url: { url: previewUrl } },
          ],
        },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    const sent = (fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!.body as { messages: { role: string; content: unknown }[] }).messages.at(-1)!;
    // The images first, then the text, as the reference builds the message.
    expect(sent.content).toEqual([
      { type: 'image_url', image_url: { url: 'https://images.example/cat.png' } },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${Buffer.from('PNGDATA').toString('base64')}` } },
      { type: 'text', text: 'what is this?' },
    ]);
  });

  it('a question naming many images sends each once, at most 20, and leaves out an upload over 20 MB', async () => {
    const appId = (await ok(t, tok, 'POST', '/core/app/create', { name: 'Vision flood', type: 'simple', aiSettings: { model: 'fake-llm' } })) as string;
    const uploadImage = async (name: string, bytes: Buffer) => {
      const boundary = '----many';
      const head = `--${boundary}\r\nContent-Disposition: form-data; name="bucketName"\r\n\r\nchat\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: image/png\r\n\r\n`;
      const upload = await t.app.inject({
        method: 'POST',
        url: '/api/common/file/upload',
        headers: { token: tok, 'content-type': `multipart/form-data; boundary=${boundary}` },
        payload: Buffer.concat([Buffer.from(head), bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]),
      });
      expect(upload.statusCode, upload.body).toBe(200);
      return (upload.json().data as { previewUrl: string }).previewUrl;
    };
    const small = await uploadImage('dot.png', Buffer.from('PNGDATA'));
    const large = await uploadImage('huge.png', Buffer.alloc(20 * 1024 * 1024 + 1, 1));
    const image = (url: string) => ({ type: 'image_url', image_url: { url } });
    const web = Array.from({ length: 30 }, (_, i) => image(`https://images.example/${i}.png`));
    const res = await completions({
      appId,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, image(large), image(small), image(small), image(small), ...web] }],
    });
    expect(res.statusCode, res.body).toBe(200);
    const sent = (fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!.body as { messages: { content: { type: string; image_url?: { url: string } }[] }[] }).messages.at(-1)!;
    const urls = sent.content.filter((part) => part.type === 'image_url').map((part) => part.image_url!.url);
    // The large upload is left out, the small one inlined once, then the first web images up to 20 in all.
    expect(urls).toEqual([`data:image/png;base64,${Buffer.from('PNGDATA').toString('base64')}`, ...web.slice(0, 18).map((part) => part.image_url.url)]);
  });

  it('a form with knowledge bases searches them before the AI chat', async () => {
    const datasetId = (await ok(t, tok, 'POST', '/core/dataset/create', { name: 'Manual' })) as string;
    const collectionId = await ok(t, tok, 'POST', '/core/dataset/collection/create', { datasetId, name: 'faq', type: 'virtual' });
    await ok(t, tok, 'POST', '/core/dataset/data/pushData', {
      collectionId,
      data: [
        { q: 'Where is the key?', a: 'The key is under the mat.' },
        { q: 'Parking spot', a: 'Visitors park behind the barn.' },
      ],
    });
    await t.app.datasets.trainingWorker.drain();
    const appId = (await ok(t, tok, 'POST', '/core/app/create', {
      name: 'Manual bot',
      type: 'simple',
      aiSettings: { model: 'fake-llm' },
      dataset: { datasets: [{ datasetId }], searchMode: 'fullTextRecall', similarity: 0, datasetSearchUsingExtensionQuery: false },
    })) as string;
    const res = await completions({ appId, detail: true, messages: [{ role: 'user', content: 'where is the key' }] });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(ranNodes(body)).toEqual(['workflowStartNodeId', 'iKBoX2vIzETU', '7BdojPlukIQw']);
    const quotes = (responseOf(body, 'iKBoX2vIzETU')?.quoteList ?? []) as { a: string }[];
    expect(quotes[0]?.a).toBe('The key is under the mat.');
    expect(responseOf(body, 'iKBoX2vIzETU')?.extensionModel).toBeUndefined();

    // With query extension (the form's default) the rewritten queries are searched too.
    const extended = (await ok(t, tok, 'POST', '/core/app/create', {
      name: 'Manual bot 2',
      type: 'simple',
      aiSettings: { model: 'fake-llm' },
      dataset: { datasets: [{ datasetId }], searchMode: 'fullTextRecall', similarity: 0 },
    })) as string;
    const original = fake.reply;
    fake.reply = (messages) => {
      const last = String(messages.at(-1)?.content ?? '');
      return last.includes('Write up to 3 search queries') ? '["parking spot for visitors"]' : 'ok';
    };
    try {
      const second = await completions({ appId: extended, detail: true, messages: [{ role: 'user', content: 'where do I leave my car' }] });
      expect(second.statusCode, second.body).toBe(200);
      const search = responseOf(second.json(), 'iKBoX2vIzETU');
      expect(search).toMatchObject({ query: 'where do I leave my car\nparking spot for visitors', extensionModel: 'Fake LLM', extensionResult: 'parking spot for visitors' });
      expect(((search?.quoteList ?? []) as { a: string }[]).map((q) => q.a)).toContain('Visitors park behind the barn.');
    } finally {
      fake.reply = original;
    }
  });

  it('a form with selected tools builds the tools agent with each tool attached', async () => {
    const tool = await ok(t, tok, 'GET', '/core/app/plugin/getPreviewNode', { appId: 'community-mathExprVal' });
    const appId = (await ok(t, tok, 'POST', '/core/app/create', { name: 'Agent form', type: 'simple', aiSettings: { model: 'fake-llm' }, selectedTools: [tool] })) as string;
    const detail = await ok(t, tok, 'GET', '/core/app/detail', { appId });
    const nodes = detail.modules as Node[];
    const agent = nodes.find((n) => n.flowNodeType === 'tools')!;
    const plugin = nodes.find((n) => n.flowNodeType === 'pluginModule')!;
    expect(plugin.pluginId).toBe('community-mathExprVal');
    expect(detail.edges).toContainEqual({ source: agent.nodeId, sourceHandle: 'selectedTools', target: plugin.nodeId, targetHandle: 'selectedTools' });
    const res = await completions({ appId, detail: true, messages: [{ role: 'user', content: '2 ^ 10' }] });
    expect(res.statusCode, res.body).toBe(200);
    const content = res.json().choices[0].message.content;
    // A tool's object answer reaches the model as indented JSON (the reference's tool response text).
    expect(content[1].text.content).toBe(`Tool said: ${JSON.stringify({ result: '1024' }, null, 2)}`);
  });

  it('refuses a form for a workflow app, and a create with neither nodes nor form', async () => {
    const advanced = await call(t, tok, 'POST', '/core/app/create', { name: 'x', type: 'advanced', aiSettings: { model: 'fake-llm' } });
    expect(advanced.status).toBe(400);
    expect(advanced.body.statusText).toBe('invalidAppType');
    const empty = await call(t, tok, 'POST', '/core/app/create', { name: 'x', type: 'simple' });
    expect(empty.status).toBe(400);
    expect(empty.body.message).toMatch(/Invalid field 'modules'/);
    const badForm = await call(t, tok, 'POST', '/core/app/create', { name: 'x', type: 'simple', aiSettings: { temperature: 'hot' } });
    expect(badForm.status).toBe(400);
    expect(badForm.body.message).toMatch(/aiSettings/);
  });
});
