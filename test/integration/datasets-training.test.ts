import { ObjectId } from 'mongodb';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { queueNextRebuild } from '../../src/platform/datasets/training/rebuild.js';
import { createTrainingWorker } from '../../src/platform/datasets/training/training-worker.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { type FakeModelProvider, openAiEmbeddingAnswer, startFakeModelProvider } from '../helpers/fake-model-provider.js';
import { createUser, login } from '../helpers/platform.js';

let provider: FakeModelProvider;
let t: TestApp;
let api: Client;
let env: Record<string, string>;
let teamId: string;
/** Embedding calls still to fail before the fake provider answers. */
let failuresLeft = 0;
/** While set, chat calls wait for it (a QA call that takes minutes); `chatSeen` resolves on the first. */
let chatGate: Promise<void> | undefined;
let chatSeen: (() => void) | undefined;
const LATER = (minutes: number) => new Date(Date.now() + minutes * 60_000);

beforeAll(async () => {
  provider = await startFakeModelProvider(async (request) => {
    if (request.path.endsWith('/embeddings')) {
      if (failuresLeft > 0) {
        failuresLeft--;
        return { status: 503, json: { error: { message: 'provider overloaded' } } };
      }
      return openAiEmbeddingAnswer((request.body as { input: string[] }).input);
    }
    if (request.path.endsWith('/chat/completions')) {
      if (chatGate) {
        chatSeen?.();
        await chatGate;
      }
      return { json: { choices: [{ message: { content: 'Q1: What colour is the sky?\nA1: Blue on a clear day.\nQ2: What colour is grass?\nA2: Green.' } }] } };
    }
    return { status: 404, json: {} };
  });
  const dir = await mkdtemp(join(tmpdir(), 'datasets-models-'));
  const configPath = join(dir, 'config.json');
  await writeFile(
    configPath,
    JSON.stringify({
      llmModels: [{ model: 'fake-llm', name: 'Fake LLM', maxContext: 16000, maxResponse: 4000, quoteMaxToken: 8000, datasetProcess: true, requestUrl: provider.baseUrl }],
      vectorModels: [{ model: 'fake-embed', name: 'Fake embed', provider: 'openai', defaultToken: 512, maxToken: 3000, weight: 100, requestUrl: provider.baseUrl }],
    }),
  );
  env = { MODEL_CONFIG_PATH: configPath };
  t = await buildTestApp(env);
  ({ teamId } = await createUser(t, { username: 'trainer', password: 'password-t1' }));
  api = client(t, await login(t, 'trainer', 'password-t1'));
});

afterAll(async () => {
  await t?.close();
  await provider?.close();
});

const worker = () => t.app.datasets.trainingWorker;
const queue = (datasetId: string) =>
  api.ok<{ trainingCount: number; rebuildingCount: number; failedItems: { errorMsg: string; retryCount: number }[] }>(
    api.get('/core/dataset/training/getDatasetTrainingQueue', { datasetId }),
  );
const listData = (collectionId: string) =>
  api.ok<{ total: number; data: { _id: string; q: string; a: string }[] }>(api.post('/core/dataset/data/list', { collectionId, pageSize: 30 }));

describe('training queue', () => {
  let datasetId: string;
  let collectionId: string;

  beforeAll(async () => {
    datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Trained', vectorModel: 'fake-embed', agentModel: 'fake-llm' }));
    collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'manual', type: 'virtual' }));
  });

  it('pushData sorts items into inserted, over-long, repeated and erroneous', async () => {
    const result = await api.ok(
      api.post('/core/dataset/data/pushData', {
        collectionId,
        data: [{ q: 'first item' }, { q: 'second item', a: 'with answer' }, { q: 'first item' }, { q: '   ' }, { q: 'x'.repeat(4000) }],
      }),
    );
    expect(result).toEqual({ insertLen: 2, overToken: [{ q: 'x'.repeat(4000) }], repeat: [{ q: 'first item' }], error: [{ q: '   ' }] });
    expect((await queue(datasetId)).trainingCount).toBe(2);
    const tooMany = await api.post('/core/dataset/data/pushData', { collectionId, data: Array.from({ length: 201 }, (_, i) => ({ q: `q${i}` })) });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.message).toContain('max 200');
  });

  it('keeps items with their error while the provider fails, then trains them', async () => {
    failuresLeft = 2;
    await worker().drain();
    let state = await queue(datasetId);
    expect(state.trainingCount).toBe(2);
    expect(state.failedItems[0]).toMatchObject({ retryCount: 1 });
    expect(state.failedItems[0]?.errorMsg).toContain('overloaded');
    expect((await listData(collectionId)).total).toBe(0);
    // Backoff: not claimable right away, claimable later.
    expect(await worker().drain()).toBe(0);
    await worker().drain(LATER(10));
    await worker().drain(LATER(20));
    state = await queue(datasetId);
    expect(state.trainingCount).toBe(0);
    const data = await listData(collectionId);
    expect(data.data.map((item) => item.q).sort()).toEqual(['first item', 'second item']);
    const pair = data.data.find((item) => item.q === 'second item')!;
    const detail = await api.ok<{ indexes: { text: string; defaultIndex: boolean }[]; sourceName: string }>(api.get('/core/dataset/data/detail', { id: pair._id }));
    expect(detail.sourceName).toBe('manual');
    expect(detail.indexes.map((index) => index.text)).toEqual(['second item\nwith answer', 'second item']);
    expect(await t.app.mongo.db.collection('dataset_vectors').countDocuments({})).toBe(3);
  });

  it('stops retrying an item that keeps failing, keeps it with its error, and unlockTask frees it', async () => {
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'poisoned item' }] }));
    failuresLeft = 1000;
    for (let round = 1; round <= 8; round++) await worker().drain(LATER(round * 60));
    const state = await queue(datasetId);
    expect(state.trainingCount).toBe(1);
    expect(state.failedItems[0]).toMatchObject({ retryCount: 5 });
    const live = await api.ok<{ vectorTrainingCount: number }>(api.get('/core/dataset/training/getQueueLen', { vectorModel: 'fake-embed' }));
    expect(live.vectorTrainingCount).toBe(0);
    failuresLeft = 0;
    expect(await worker().drain(LATER(24 * 60))).toBe(0);
    // An item waiting its turn is not locked: unlocking counts (and touches) the failed one only.
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'waiting item' }] }));
    const unlocked = await api.ok<{ unlocked: number }>(api.get('/common/system/unlockTask'));
    expect(unlocked.unlocked).toBe(1);
    await worker().drain();
    expect((await queue(datasetId)).trainingCount).toBe(0);
    expect((await listData(collectionId)).total).toBe(4);
  });

  it('caps an item retry delay at the longest backoff, however many attempts are allowed', async () => {
    const patient = createTrainingWorker(t.app.datasets.ctx, { maxRetries: 60, backoffMs: 1_000, maxBackoffMs: 30_000, lockMs: 5_000 });
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'slow to train' }] }));
    const items = t.app.mongo.db.collection('dataset_trainings');
    // Many failures already: uncapped, 2^40 s would put the retry after the permanent lock.
    await items.updateOne({ q: 'slow to train' }, { $set: { retryCount: 40 } });
    failuresLeft = 1;
    const now = new Date();
    await patient.drain(now);
    const item = await items.findOne({ q: 'slow to train' });
    expect(item).toMatchObject({ retryCount: 41 });
    // Claimable one lock window before the retry time: at most 30 s - 5 s after the failure.
    expect(item!.lockTime.getTime() - now.getTime()).toBeLessThanOrEqual(25_000 + 5_000);
    expect(item!.lockTime.getTime()).toBeGreaterThan(now.getTime());
    await patient.drain(new Date(now.getTime() + 60_000));
    expect(await items.countDocuments({ q: 'slow to train' })).toBe(0);
  });

  it('unlockTask leaves batches in progress to the worker that claimed them', async () => {
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'retried while unlocked' }] }));
    failuresLeft = 1;
    await worker().drain();
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'fresh while unlocked' }] }));
    // Worker A (another replica) is working on both: the failed one's backoff is over by then.
    const { trainings } = t.app.datasets.ctx.repos;
    const at = LATER(10);
    const batch = await trainings.claimBatch(at, 15_000, 10, 'worker-a');
    expect(batch.map((item) => item.q).sort()).toEqual(['fresh while unlocked', 'retried while unlocked']);
    expect((await api.ok<{ unlocked: number }>(api.get('/common/system/unlockTask'))).unlocked).toBe(1);
    // Worker B finds nothing to take: both are still worker A's.
    expect(await trainings.claimBatch(at, 15_000, 10, 'worker-b')).toEqual([]);
    await trainings.release(batch.map((item) => item._id));
    await worker().drain(at);
    expect((await queue(datasetId)).trainingCount).toBe(0);
  });

  it('QA mode turns text into Q/A pairs through the LLM', async () => {
    const qaCollection = await api.ok<{ collectionId: string }>(
      api.post('/core/dataset/collection/create/text', { datasetId, name: 'qa source', text: 'The sky is blue. Grass is green.', trainingType: 'qa', chunkSize: 4000 }),
    );
    // Queue lengths by model: the QA item waits for the LLM, then its pairs for the embedding model.
    const queueLen = () => api.ok(api.get('/core/dataset/training/getQueueLen', { vectorModel: 'fake-embed', agentModel: 'fake-llm' }));
    expect(await queueLen()).toEqual({ vectorTrainingCount: 0, agentTrainingCount: 1 });
    await worker().drain(undefined, 1);
    expect(await queueLen()).toEqual({ vectorTrainingCount: 2, agentTrainingCount: 0 });
    expect((await queue(datasetId)).trainingCount).toBe(2);
    await worker().drain();
    expect(await queueLen()).toEqual({ vectorTrainingCount: 0, agentTrainingCount: 0 });
    const data = await listData(qaCollection.collectionId);
    expect(data.data.map((item) => [item.q, item.a]).sort()).toEqual([
      ['What colour is grass?', 'Green.'],
      ['What colour is the sky?', 'Blue on a clear day.'],
    ]);
  });

  it('QA pairs are sized when the LLM has answered: pairs past the plan fail the item, nothing queued', async () => {
    await worker().drain();
    const used = await t.app.teamLimits.usedDatasetSize(teamId);
    // The push fits the guess for one QA item; the plan then fills before the two pairs (4 vectors) come.
    await t.app.teamLimits.setPlan(teamId, { maxDatasetSize: used + 20 });
    const { collectionId: qaCollectionId } = await api.ok<{ collectionId: string }>(
      api.post('/core/dataset/collection/create/text', { datasetId, name: 'qa past the plan', text: 'The sky is blue. Grass is green.', trainingType: 'qa', chunkSize: 4000 }),
    );
    try {
      await t.app.teamLimits.setPlan(teamId, { maxDatasetSize: used + 3 });
      await worker().drain(undefined, 1);
      const state = await queue(datasetId);
      expect(state.trainingCount).toBe(1);
      expect(state.failedItems[0]?.errorMsg).toContain('dataset capacity');
    } finally {
      await t.app.teamLimits.setPlan(teamId, { maxDatasetSize: 1_000_000 });
    }
    await worker().drain(LATER(10));
    expect((await listData(qaCollectionId)).total).toBe(2);
    expect(await t.app.teamLimits.usedDatasetSize(teamId)).toBe(used + 4);
  });

  it('a stopping worker ends its QA model call at once and hands the item back unharmed', async () => {
    let open: () => void = () => undefined;
    chatGate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const seen = new Promise<void>((resolve) => {
      chatSeen = resolve;
    });
    try {
      await api.ok(api.post('/core/dataset/collection/create/text', { datasetId, name: 'slow qa', text: 'Rivers flow to the sea.', trainingType: 'qa', chunkSize: 4000 }));
      worker().start();
      await seen;
      // Without ending the call, stop() would wait out the 10-minute model timeout.
      await worker().stop();
      const { trainings } = t.app.datasets.ctx.repos;
      const [item] = await trainings.claimBatch(new Date(), 15_000, 10, 'after-stop');
      expect(item).toMatchObject({ mode: 'qa', retryCount: 0 });
      await trainings.release([item!._id]);
    } finally {
      chatGate = undefined;
      open();
    }
    await worker().drain();
    expect((await queue(datasetId)).trainingCount).toBe(0);
  });

  it('survives a restart mid-queue without losing or duplicating items', async () => {
    const items = Array.from({ length: 12 }, (_, i) => ({ q: `restart item ${i}`, chunkIndex: i }));
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: items }));
    // A worker claims some items and the process dies before finishing them.
    const { trainings } = t.app.datasets.ctx.repos;
    // Claimed as if 5 minutes from now, so the claims outlive the restart below on any machine.
    expect(await trainings.claimBatch(LATER(5), 15_000, 5)).toHaveLength(5);
    await t.app.close();

    const restarted = await buildTestApp({ ...env, MONGODB_URI: t.config.MONGODB_URI, TRAINING_WORKER: 'true' });
    t = restarted;
    api = client(t, await login(t, 'trainer', 'password-t1'));
    // The background worker trains the unclaimed items; the claimed ones come back once their lock expires.
    for (let i = 0; i < 100 && (await queue(datasetId)).trainingCount > 5; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await queue(datasetId)).trainingCount).toBe(5);
    // The rest of the file drives the worker by hand (deterministic clocks).
    await worker().stop();
    await worker().drain(LATER(6));
    expect((await queue(datasetId)).trainingCount).toBe(0);
    const data = await listData(collectionId);
    const restartQs = data.data.map((item) => item.q).filter((q) => q.startsWith('restart item'));
    expect(restartQs.sort()).toEqual(items.map((item) => item.q).sort());
    const db = t.app.mongo.db;
    // Exactly one vector per index of every item: nothing doubled by the re-run.
    const indexes = (await db.collection('dataset_datas').find({}).toArray()).reduce((sum, doc) => sum + (doc.indexes as unknown[]).length, 0);
    expect(await db.collection('dataset_vectors').countDocuments({})).toBe(indexes);
  });

  it('inserts, updates (re-embedding changed indexes) and deletes single items', async () => {
    const dataId = await api.ok<string>(api.post('/core/dataset/data/insertData', { collectionId, q: 'direct item', a: 'direct answer', indexes: [{ text: 'alias text' }] }));
    const duplicate = await api.post('/core/dataset/data/insertData', { collectionId, q: 'direct item', a: 'direct answer' });
    expect(duplicate.status).toBe(409);
    const before = await api.ok<{ indexes: { dataId: string; text: string; defaultIndex: boolean }[] }>(api.get('/core/dataset/data/detail', { id: dataId }));
    expect(before.indexes.map((index) => index.text)).toEqual(['direct item\ndirect answer', 'alias text']);
    const alias = before.indexes.find((index) => index.text === 'alias text')!;
    const embeddingsBefore = provider.requests.filter((request) => request.path.endsWith('/embeddings')).length;
    await api.ok(api.put('/core/dataset/data/update', { dataId, q: 'direct item', a: 'direct answer', indexes: [{ dataId: alias.dataId, text: 'alias changed' }] }));
    const calls = provider.requests.filter((request) => request.path.endsWith('/embeddings')).slice(embeddingsBefore);
    expect(calls.map((request) => (request.body as { input: string[] }).input)).toEqual([['alias changed']]);
    const after = await api.ok<{ indexes: { dataId: string; text: string }[] }>(api.get('/core/dataset/data/detail', { id: dataId }));
    expect(after.indexes.map((index) => index.text)).toEqual(['direct item\ndirect answer', 'alias changed']);
    const db = t.app.mongo.db;
    expect(await db.collection('dataset_vectors').countDocuments({ _id: alias.dataId as never })).toBe(0);
    expect(await api.ok(api.del('/core/dataset/data/delete', { id: dataId }))).toBe('success');
    expect((await api.get('/core/dataset/data/detail', { id: dataId })).status).toBe(404);
    for (const index of after.indexes) expect(await db.collection('dataset_vectors').countDocuments({ _id: index.dataId as never })).toBe(0);
  });

  it('refuses data naming another dataset than its collection', async () => {
    const other = await api.ok<string>(api.post('/core/dataset/create', { name: 'Other', vectorModel: 'fake-embed' }));
    const response = await api.post('/core/dataset/data/pushData', { collectionId, datasetId: other, data: [{ q: 'misplaced' }] });
    expect(response.status).toBe(400);
    expect(response.body.message).toContain('collectionId');
    const insert = await api.post('/core/dataset/data/insertData', { collectionId, datasetId: other, q: 'misplaced' });
    expect(insert.status).toBe(400);
    expect((await queue(other)).trainingCount).toBe(0);
  });

  it('rebuildEmbedding switches the vector model and re-embeds everything', async () => {
    const total = (await listData(collectionId)).total;
    const same = await api.post('/core/dataset/training/rebuildEmbedding', { datasetId, vectorModel: 'fake-embed' });
    expect(same.status).toBe(400);
    const unknown = await api.post('/core/dataset/training/rebuildEmbedding', { datasetId, vectorModel: 'nope' });
    expect(unknown.status).toBe(400);
    expect(await api.ok(api.post('/core/dataset/training/rebuildEmbedding', { datasetId, vectorModel: 'local-lexical-v1' }))).toEqual({});
    await worker().drain(LATER(60));
    const state = await queue(datasetId);
    expect(state).toMatchObject({ trainingCount: 0, rebuildingCount: 0 });
    const db = t.app.mongo.db;
    const models = await db.collection('dataset_vectors').distinct('model', {});
    expect(models).toEqual(['local-lexical-v1']);
    expect((await listData(collectionId)).total).toBe(total);
    const detail = await api.ok<{ vectorModel: { model: string } }>(api.get('/core/dataset/detail', { id: datasetId }));
    expect(detail.vectorModel.model).toBe('local-lexical-v1');
  });

  it('rebuildEmbedding starts a rebuild that stopped part-way over, instead of refusing it for good', async () => {
    const teamId = String((await t.app.mongo.db.collection('datasets').findOne({ _id: new ObjectId(datasetId) }))?.teamId);
    // A failure right after the flags went on: flagged items, the model already switched, nothing queued.
    await t.app.datasets.ctx.repos.data.markRebuilding(teamId, datasetId);
    expect(await queue(datasetId)).toMatchObject({ trainingCount: 0 });
    expect(await api.ok(api.post('/core/dataset/training/rebuildEmbedding', { datasetId, vectorModel: 'local-lexical-v1' }))).toEqual({});
    await worker().drain(LATER(60));
    expect(await queue(datasetId)).toMatchObject({ trainingCount: 0, rebuildingCount: 0 });
    expect(await t.app.mongo.db.collection('dataset_vectors').distinct('model', {})).toEqual(['local-lexical-v1']);
    // Nothing flagged any more: the same model again is the usual 400.
    expect((await api.post('/core/dataset/training/rebuildEmbedding', { datasetId, vectorModel: 'local-lexical-v1' })).status).toBe(400);
  });

  it('a rebuild whose process dies right after the first write of a chain link loses no item', async () => {
    const rebuilt = await api.ok<string>(api.post('/core/dataset/create', { name: 'Rebuilt', vectorModel: 'fake-embed' }));
    const target = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId: rebuilt, name: 'c', type: 'virtual' }));
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId: target, data: [{ q: 'rebuilt one' }, { q: 'rebuilt two' }] }));
    await worker().drain();
    const db = t.app.mongo.db;
    const teamId = String((await db.collection('datasets').findOne({ _id: new ObjectId(rebuilt) }))?.teamId);
    const { ctx } = t.app.datasets;
    const model = 'local-lexical-v1';
    // rebuildEmbedding's first steps: every item flagged, the model switched.
    await ctx.repos.data.markRebuilding(teamId, rebuilt);
    await ctx.repos.datasets.update(teamId, rebuilt, { vectorModel: model });
    await ctx.searchIndex.switchModel(rebuilt, model);
    // The first link of the chain: the process dies once its first write landed (nothing after it runs).
    const repos = ctx.repos;
    let dead = false;
    const dying = <T extends object>(repo: T, reads: string[]): T =>
      new Proxy(repo, {
        get(target, name) {
          const method = Reflect.get(target, name) as unknown;
          if (typeof method !== 'function') return method;
          return async (...args: unknown[]) => {
            if (dead) throw new Error('killed');
            const result = await method.apply(target, args);
            if (!reads.includes(String(name))) dead = true;
            return result;
          };
        },
      });
    ctx.repos = { ...repos, data: dying(repos.data, ['nextRebuilding', 'findById', 'countRebuilding']), trainings: dying(repos.trainings, ['countByDataset']) };
    const base = { teamId, tmbId: String((await db.collection('datasets').findOne({ _id: new ObjectId(rebuilt) }))?.tmbId), datasetId: rebuilt, billId: '', mode: 'chunk' as const, model, prompt: '', weight: 0 };
    try {
      await expect(queueNextRebuild(ctx, base)).rejects.toThrow('killed');
    } finally {
      ctx.repos = repos;
    }
    // After the restart the queue finishes the rebuild: both items carry vectors of the new model only.
    await worker().drain(LATER(60));
    expect(await queue(rebuilt)).toMatchObject({ trainingCount: 0, rebuildingCount: 0 });
    const vectors = await db.collection('dataset_vectors').find({ datasetId: new ObjectId(rebuilt) }).toArray();
    expect(vectors.map((vector) => vector.model)).toEqual([model, model]);
    expect((await api.post('/core/dataset/training/rebuildEmbedding', { datasetId: rebuilt, vectorModel: model })).status).toBe(400);

    // Chains reaching the same item at once queue it once, and each still queues an item while any waits.
    await ctx.repos.data.markRebuilding(teamId, rebuilt);
    await ctx.repos.datasets.update(teamId, rebuilt, { vectorModel: 'fake-embed' });
    await ctx.searchIndex.switchModel(rebuilt, 'fake-embed');
    const links = await Promise.all([1, 2, 3].map(() => queueNextRebuild(ctx, { ...base, model: 'fake-embed' })));
    expect(links.sort()).toEqual([false, true, true]);
    expect(await queue(rebuilt)).toMatchObject({ trainingCount: 2, rebuildingCount: 0 });
    await worker().drain(LATER(60));
    const back = await db.collection('dataset_vectors').find({ datasetId: new ObjectId(rebuilt) }).toArray();
    expect(back.map((vector) => vector.model)).toEqual(['fake-embed', 'fake-embed']);
  });

  it('trains a batch that spans teams (each dataset written on its own)', async () => {
    await createUser(t, { username: 'other-trainer', password: 'password-t2' });
    const other = client(t, await login(t, 'other-trainer', 'password-t2'));
    const otherDataset = await other.ok<string>(other.post('/core/dataset/create', { name: 'Other team', vectorModel: 'local-lexical-v1' }));
    const otherCollection = await other.ok<string>(other.post('/core/dataset/collection/create', { datasetId: otherDataset, name: 'c', type: 'virtual' }));
    // The first dataset uses this model since its rebuild above: both items go in one batch.
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'first team item' }] }));
    await other.ok(other.post('/core/dataset/data/pushData', { collectionId: otherCollection, data: [{ q: 'second team item' }] }));
    expect(await worker().runOnce()).toBe(2);
    expect((await queue(datasetId)).trainingCount).toBe(0);
    expect((await other.ok<{ total: number }>(other.post('/core/dataset/data/list', { collectionId: otherCollection }))).total).toBe(1);
    expect((await listData(collectionId)).data.map((item) => item.q)).toContain('first team item');
  });
});
