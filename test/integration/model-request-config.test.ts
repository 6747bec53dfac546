import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { type FakeOpenAi, fakeModelConfig, startFakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { chain, createPublishedApp } from './chat-helpers.js';

/**
 * A model's `defaultConfig` in the body every caller sends to /chat/completions: merged in first,
 * so the caller's own temperature and max_tokens win and the config fills the rest (top_p here),
 * from the workflow's nodes and the dataset workers alike.
 */
let t: TestApp;
let fake: FakeOpenAi;
let tok: string;
let api: Client;

const MODEL = 'cfg-llm';
let guideConfigPath = '';

/** The body of each /chat/completions call `run` made. */
async function chatBodies(run: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const before = fake.requests.length;
  await run();
  return fake.requests.slice(before).filter((request) => request.path === '/v1/chat/completions').map((request) => request.body as Record<string, unknown>);
}

const completions = async (appId: string) => {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(tok), payload: { appId, messages: [{ role: 'user', content: 'hello' }] } });
  expect(res.statusCode, res.body).toBe(200);
};

/** A model node of `flowNodeType` with its own temperature (5 of the editor's 10) and maxToken. */
const modelNode = (nodeId: string, flowNodeType: string) => ({
  nodeId,
  flowNodeType,
  name: nodeId,
  inputs: [
    { key: 'model', value: MODEL },
    { key: 'temperature', value: 5 },
    { key: 'maxToken', value: 300 },
    { key: 'userChatInput', value: ['start', 'userChatInput'] },
  ],
  outputs: [{ id: 'answerText', key: 'answerText' }],
});

beforeAll(async () => {
  fake = await startFakeOpenAi();
  const base = fakeModelConfig(fake.baseUrl);
  const configured = {
    ...base.llmModels[0],
    model: MODEL,
    name: 'Configured LLM',
    maxTemperature: 1.2,
    datasetProcess: true,
    defaultConfig: { temperature: 1, max_tokens: 99, top_p: 0.5 },
  };
  const dir = await mkdtemp(join(tmpdir(), 'model-request-'));
  await writeFile(join(dir, 'config.json'), JSON.stringify({ ...base, llmModels: [...base.llmModels, configured] }));
  // The question guide asks the first language model: here the configured one.
  await writeFile(join(dir, 'guide-config.json'), JSON.stringify({ ...base, llmModels: [configured] }));
  guideConfigPath = join(dir, 'guide-config.json');
  t = await buildTestApp({ MODEL_CONFIG_PATH: join(dir, 'config.json'), SSRF_ALLOW_PRIVATE: 'true' });
  await createUser(t, { username: 'configured', password: 'password-c1' });
  tok = await login(t, 'configured', 'password-c1');
  api = client(t, tok);
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe("a model's defaultConfig {temperature: 1, max_tokens: 99, top_p: 0.5}", () => {
  // 5 on the editor's 0–10 scale of a model whose maxTemperature is 1.2.
  const nodeValues = { model: MODEL, temperature: 0.6, max_tokens: 300, top_p: 0.5 };

  it("an AI chat node sends the node's temperature and maxToken, and the config's top_p", async () => {
    const appId = await createPublishedApp(t, tok, 'Configured chat', chain(modelNode('ai', 'chatNode')));
    const bodies = await chatBodies(() => completions(appId));
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).toMatchObject(nodeValues);
  });

  it('a tools node sends them alike', async () => {
    const appId = await createPublishedApp(t, tok, 'Configured agent', chain(modelNode('agent', 'tools')));
    const bodies = await chatBodies(() => completions(appId));
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).toMatchObject(nodeValues);
  });

  it("the query extension node sends its own temperature and max_tokens, and the config's top_p", async () => {
    const appId = await createPublishedApp(t, tok, 'Configured extension', chain(modelNode('cfr', 'cfr')));
    const bodies = await chatBodies(() => completions(appId));
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).toMatchObject({ model: MODEL, temperature: 0.1, max_tokens: 300, top_p: 0.5 });
  });

  it("searchTest's query extension sends the same", async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Configured search', agentModel: MODEL }));
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'faq', type: 'virtual' }));
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'The office opens at nine.' }] }));
    await t.app.datasets.trainingWorker.drain();
    const bodies = await chatBodies(() =>
      api.ok(api.post('/core/dataset/searchTest', { datasetId, text: 'When does the office open?', searchMode: 'fullTextRecall', datasetSearchExtensionModel: MODEL })),
    );
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).toMatchObject({ model: MODEL, temperature: 0.1, max_tokens: 300, top_p: 0.5 });
  });

  it("QA training sends its own temperature; the max_tokens it leaves out is the config's", async () => {
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Configured QA', agentModel: MODEL }));
    await api.ok(api.post('/core/dataset/collection/create/text', { datasetId, name: 'qa source', text: 'The sky is blue. Grass is green.', trainingType: 'qa', chunkSize: 4000 }));
    const bodies = await chatBodies(() => t.app.datasets.trainingWorker.drain(undefined, 1));
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).toMatchObject({ model: MODEL, temperature: 0.3, max_tokens: 99, top_p: 0.5, stream: false });
  });

  it('the question guide sends its own temperature and max_tokens, and the config’s top_p', async () => {
    const guide = await buildTestApp({ MODEL_CONFIG_PATH: guideConfigPath });
    try {
      await createUser(guide, { username: 'guide-asker', password: 'password-g1' });
      const token = await login(guide, 'guide-asker', 'password-g1');
      const bodies = await chatBodies(async () => {
        const res = await guide.app.inject({ method: 'POST', url: '/api/core/ai/agent/createQuestionGuide', headers: authHeaders(token), payload: { messages: [{ role: 'user', content: 'hi' }] } });
        expect(res.statusCode, res.body).toBe(200);
      });
      expect(bodies).toHaveLength(1);
      expect(bodies[0]).toMatchObject({ model: MODEL, temperature: 0.1, max_tokens: 200, top_p: 0.5 });
    } finally {
      await guide.close();
    }
  });
});
