import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTrainingWorker } from '../../src/platform/datasets/training/training-worker.js';
import { client } from '../fixtures/datasets/client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { type FakeModelProvider, openAiEmbeddingAnswer, startFakeModelProvider } from '../helpers/fake-model-provider.js';
import { login } from '../helpers/platform.js';
import { openTestDatabase, platformCaller, type RealServer, startRealServer, waitFor } from '../helpers/real-process.js';
import { writeFakeModelConfig } from './crash-helpers.js';

/**
 * `kill -9` of the server while it trains, then a restart: every queued item, chunk and QA,
 * ends up trained exactly once. The fake LLM numbers its answers, so a QA item whose pairs were
 * queued twice (or asked for twice and both kept) shows up as extra data items.
 */
let provider: FakeModelProvider;
let modelConfigPath: string;
let llmCalls = 0;
let llmDelayMs = 100;
/** Told of each LLM request as it arrives (before it is answered). */
let onLlmRequest: (calls: number) => void = () => undefined;

beforeAll(async () => {
  provider = await startFakeModelProvider((request) => {
    if (request.path.endsWith('/embeddings')) return { ...openAiEmbeddingAnswer((request.body as { input: string[] }).input), delayMs: 20 };
    if (request.path.endsWith('/chat/completions')) {
      llmCalls += 1;
      const call = llmCalls;
      onLlmRequest(call);
      const source = /source (\d+)/.exec(JSON.stringify(request.body))?.[1] ?? '?';
      const content = `Q1: Question ${source} one, call ${call}?\nA1: Answer ${source} one.\nQ2: Question ${source} two, call ${call}?\nA2: Answer ${source} two.`;
      return { json: { choices: [{ message: { content } }] }, delayMs: llmDelayMs };
    }
    return { status: 404, json: {} };
  });
  modelConfigPath = await writeFakeModelConfig(provider.baseUrl);
});

afterAll(async () => {
  await provider?.close();
});

/** How many data items of the dataset have each q (QA pairs keyed without their call number). */
async function countsByQuestion(db: import('mongodb').Db, datasetId: string): Promise<Map<string, number>> {
  const docs = await db.collection('dataset_datas').find({}, { projection: { q: 1, datasetId: 1 } }).toArray();
  const counts = new Map<string, number>();
  for (const doc of docs) {
    if (String(doc.datasetId) !== datasetId) continue;
    const key = String(doc.q).replace(/, call \d+\?$/, '');
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

describe('kill -9 during training', () => {
  let server: RealServer | undefined;
  let database: Awaited<ReturnType<typeof openTestDatabase>>;

  beforeAll(async () => {
    database = await openTestDatabase();
  });

  afterAll(async () => {
    await server?.kill9();
    await database?.close();
  });

  it('trains every queued chunk and QA item exactly once after a restart', { timeout: 180_000 }, async () => {
    // Short claims (3 s, lapsing 6 s after their last renewal): the restarted worker takes the dead one's items sooner.
    const env = { MODEL_CONFIG_PATH: modelConfigPath, TRAINING_LOCK_MS: '3000' };
    server = await startRealServer(database.uri, env);
    let api = await platformCaller(server);
    const datasetId = await api.ok<string>('POST', '/core/dataset/create', { name: 'Crash training', vectorModel: 'fake-embed', agentModel: 'fake-llm' });
    const collectionId = await api.ok<string>('POST', '/core/dataset/collection/create', { datasetId, name: 'items', type: 'virtual' });
    const chunks = Array.from({ length: 400 }, (_, i) => ({ q: `chunk item ${i}`, chunkIndex: i }));
    const sources = Array.from({ length: 30 }, (_, k) => ({ q: `source ${k}: a paragraph to turn into questions`, chunkIndex: k }));

    // The fifth LLM request is where the process dies: four QA items are done, the fifth is claimed.
    const fifthCall = new Promise<void>((resolve) => {
      onLlmRequest = (calls) => calls === 5 && resolve();
    });
    await api.ok('POST', '/core/dataset/data/pushData', { collectionId, trainingMode: 'chunk', data: chunks.slice(0, 200) });
    await api.ok('POST', '/core/dataset/data/pushData', { collectionId, trainingMode: 'qa', data: sources });
    await api.ok('POST', '/core/dataset/data/pushData', { collectionId, trainingMode: 'chunk', data: chunks.slice(200) });
    await fifthCall;
    await server.kill9();

    const { db } = database;
    const trainedBeforeCrash = await db.collection('dataset_datas').countDocuments({});
    const queuedAtCrash = await db.collection('dataset_trainings').countDocuments({});
    expect(trainedBeforeCrash).toBeGreaterThan(0);
    expect(queuedAtCrash).toBeGreaterThan(0);
    // The dead worker's claims would lapse two lock windows (6 s) after their last renewal: run
    // their clocks out instead; the restarted worker still has to see them lapsed to take the items.
    const claims = db.collection<{ lockTime: Date }>('dataset_training_claims');
    expect(await claims.countDocuments({})).toBeGreaterThan(0);
    await claims.updateMany({}, { $set: { lockTime: new Date(0) } });

    server = await startRealServer(database.uri, env);
    api = await platformCaller(server);
    // The dead worker's claims have lapsed and its items come back.
    await waitFor('the training queue to drain', async () => (await db.collection('dataset_trainings').countDocuments({})) === 0, { timeoutMs: 120_000, intervalMs: 250 });

    const counts = await countsByQuestion(db, datasetId);
    const expected = [...chunks.map((chunk) => chunk.q), ...sources.flatMap((_, k) => [`Question ${k} one`, `Question ${k} two`])];
    const wrong = expected.filter((q) => counts.get(q) !== 1).map((q) => `${q}: ${counts.get(q) ?? 0}`);
    expect(wrong).toEqual([]);
    expect([...counts.values()].reduce((sum, n) => sum + n, 0)).toBe(expected.length);
    // The QA item in flight at the crash was asked again, and only that answer was kept.
    expect(llmCalls).toBeGreaterThan(sources.length);
    // Exactly one vector per index: nothing written twice by the re-runs.
    const indexes = (await db.collection('dataset_datas').find({}, { projection: { indexes: 1 } }).toArray()).reduce((sum, doc) => sum + (doc.indexes as unknown[]).length, 0);
    expect(await db.collection('dataset_vectors').countDocuments({})).toBe(indexes);

    // The count is 0 at once unless the kill landed between a queue removal and its count delta;
    // then the restarted worker recounts it seconds after running dry (5 s settle, 2 s polls).
    const trainingCount = async () =>
      (await api.ok<{ trainingCount: number }>('GET', `/core/dataset/training/getDatasetTrainingQueue?datasetId=${datasetId}`)).trainingCount;
    await waitFor('the queue count to reach 0', async () => (await trainingCount()) === 0, { timeoutMs: 30_000, intervalMs: 500 });
    const listed = await api.ok<{ total: number }>('POST', '/core/dataset/data/list', { collectionId, pageSize: 10 });
    expect(listed.total).toBe(expected.length);
  });
});

/**
 * In process, the windows a real kill cannot aim at: a QA item whose pairs are queued but which
 * is not yet deleted when the process dies (here: the delete fails), and a claim held through an
 * LLM call longer than the lease.
 */
describe('QA items interrupted or slow', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp({ MODEL_CONFIG_PATH: modelConfigPath });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('interrupted after queueing its pairs: the retry queues nothing twice, asks the LLM once, and no pair trains before', async () => {
    const api = client(t, await login(t, 'root', 'root-password-1'));
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'QA window', vectorModel: 'fake-embed', agentModel: 'fake-llm' }));
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'qa', type: 'virtual' }));
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, trainingMode: 'qa', data: [{ q: 'source 7: the sky and the grass' }] }));
    const { ctx, trainingWorker } = t.app.datasets;
    const { trainings } = ctx.repos;
    const qaItem = (await t.app.mongo.db.collection('dataset_trainings').findOne({ mode: 'qa' }))!;
    const deleteItems = trainings.deleteItems;
    trainings.deleteItems = async (items) => {
      if (items.some((item) => item._id === String(qaItem._id))) throw new Error('process died here');
      return deleteItems(items);
    };
    const callsBefore = llmCalls;
    try {
      await trainingWorker.drain();
    } finally {
      trainings.deleteItems = deleteItems;
    }
    const db = t.app.mongo.db;
    // The pairs are queued, held while their QA item is still there: nothing trained yet.
    const queue = await api.ok<{ trainingCount: number }>(api.get('/core/dataset/training/getDatasetTrainingQueue', { datasetId }));
    expect(queue.trainingCount).toBe(3);
    expect(await db.collection('dataset_datas').countDocuments({ datasetId: qaItem.datasetId })).toBe(0);

    await trainingWorker.drain(new Date(Date.now() + 10 * 60_000));
    expect(await db.collection('dataset_trainings').countDocuments({})).toBe(0);
    const data = await api.ok<{ total: number; data: { q: string }[] }>(api.post('/core/dataset/data/list', { collectionId, pageSize: 30 }));
    expect(data.data.map((item) => item.q.replace(/, call \d+\?$/, '')).sort()).toEqual(['Question 7 one', 'Question 7 two']);
    expect(llmCalls - callsBefore).toBe(1);
  });

  it('keeps its claim through an LLM call longer than the lease (no second worker takes it)', async () => {
    const api = client(t, await login(t, 'root', 'root-password-1'));
    const datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'QA lease', vectorModel: 'fake-embed', agentModel: 'fake-llm' }));
    const collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'qa', type: 'virtual' }));
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, trainingMode: 'qa', data: [{ q: 'source 8: slow answers' }] }));
    const { ctx } = t.app.datasets;
    // Two workers with a 3 s lease; the LLM takes 7 s to answer the one that claimed the item.
    const first = createTrainingWorker(ctx, { lockMs: 3_000 });
    const second = createTrainingWorker(ctx, { lockMs: 3_000 });
    const callsBefore = llmCalls;
    llmDelayMs = 7_000;
    try {
      const working = first.runOnce();
      let done = false;
      void working.finally(() => {
        done = true;
      });
      await waitFor('the first worker to ask the LLM', async () => llmCalls > callsBefore, { intervalMs: 10 });
      // The second worker polls all along; taking the QA item would mean asking the LLM again.
      while (!done) {
        await second.runOnce();
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(await working).toBe(1);
    } finally {
      llmDelayMs = 100;
    }
    expect(llmCalls - callsBefore).toBe(1);
    await first.drain();
    const data = await api.ok<{ data: { q: string }[] }>(api.post('/core/dataset/data/list', { collectionId, pageSize: 30 }));
    expect(data.data.map((item) => item.q.replace(/, call \d+\?$/, '')).sort()).toEqual(['Question 8 one', 'Question 8 two']);
  });
});
