import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client } from '../fixtures/datasets/client.js';
import { buildReplica, buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';

/**
 * Text and number edges of the dataset routes: full-text tokens of astral scripts cut at a
 * character boundary (found by the writing process and by another one), and integers sent as
 * text held to the safe-integer range.
 */
let t: TestApp;
let replica: TestApp;
let api: Client;
let datasetId: string;
let collectionId: string;

// 51 UTF-16 units of Adlam letters: a cut at 40 units would fall inside a surrogate pair.
const ADLAM_WORD = `x${'𞤢'.repeat(25)}`;

const search = (caller: Client, text: string) =>
  caller.ok<{ list: { q: string }[] }>(caller.post('/core/dataset/searchTest', { datasetId, text, searchMode: 'fullTextRecall' })).then((result) => result.list.map((item) => item.q));

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'texts', password: 'password-t1' });
  api = client(t, await login(t, 'texts', 'password-t1'));
  datasetId = await api.ok<string>(api.post('/core/dataset/create', { name: 'Scripts' }));
  collectionId = await api.ok<string>(api.post('/core/dataset/collection/create', { datasetId, name: 'words', type: 'virtual' }));
});

afterAll(async () => {
  await replica?.close();
  await t?.close();
});

describe('full-text tokens of astral scripts', () => {
  it('finds a long word whose 40-unit cut would split a surrogate pair, here and in another process', async () => {
    await api.ok(api.post('/core/dataset/data/insertData', { collectionId, q: `Adlam ${ADLAM_WORD} here` }));
    await api.ok(api.post('/core/dataset/data/insertData', { collectionId, q: 'Latin only' }));
    expect(await search(api, ADLAM_WORD)).toEqual([`Adlam ${ADLAM_WORD} here`]);
    replica = await buildReplica(t);
    const other = client(replica, await login(replica, 'texts', 'password-t1'));
    expect(await search(other, ADLAM_WORD)).toEqual([`Adlam ${ADLAM_WORD} here`]);
    const stored = await t.app.mongo.db.collection('dataset_datas').findOne({ q: `Adlam ${ADLAM_WORD} here` });
    const tokens = (stored?.fullTextTokens ?? []) as string[];
    expect(tokens).toContain(`x${'𞤢'.repeat(19)}`);
    expect(tokens.some((token) => token.includes('\uFFFD'))).toBe(false);
  });
});

describe('pushData chunkIndex sent as text', () => {
  it.each([
    ['401 digits (Infinity as a number)', `1${'0'.repeat(400)}`],
    ['20 digits', '99999999999999999999'],
    ['-(2^53 + 1)', '-9007199254740993'],
  ])('%s: beyond the safe integers is a 400 naming the field', async (_name, chunkIndex) => {
    const response = await api.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'big index', chunkIndex }] });
    expect(response.status).toBe(400);
    expect(response.body.message).toContain('chunkIndex');
  });

  it('a safe integer as text is read as that number', async () => {
    await api.ok(api.post('/core/dataset/data/pushData', { collectionId, data: [{ q: 'indexed as text', chunkIndex: '9007199254740991' }] }));
    await t.app.datasets.trainingWorker.drain();
    const stored = await t.app.mongo.db.collection('dataset_datas').findOne({ q: 'indexed as text' });
    expect(stored?.chunkIndex).toBe(9007199254740991);
  });
});

describe('a training usage name cut at 200 units', () => {
  it('keeps a whole emoji out rather than half of one', async () => {
    const name = `${'n'.repeat(199)}😀 and more`;
    const billId = await api.ok<string>(api.post('/support/wallet/usage/createTrainingUsage', { datasetId, name }));
    const stored = await t.app.mongo.db.collection('usages').findOne({ _id: new ObjectId(billId) });
    expect(stored?.appName).toBe('n'.repeat(199));
  });
});
