import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp, searchGraph, startChatApp } from './chat-helpers.js';

/**
 * A stored workflow naming a dataset that was deleted searches the ones left (the reference
 * searches the graph's ids within the team); refusals and ids given at run time keep their errors.
 */
let t: TestApp;
let fake: FakeOpenAi;
let ownerToken: string;
let editorToken: string;


async function datasetWith(name: string, text: string): Promise<string> {
  const datasetId = await ok(t, ownerToken, 'POST', '/core/dataset/create', { name });
  const collectionId = await ok(t, ownerToken, 'POST', '/core/dataset/collection/create', { datasetId, name: `${name} notes`, type: 'virtual' });
  await ok(t, ownerToken, 'POST', '/core/dataset/data/insertData', { collectionId, q: text });
  await t.app.datasets.trainingWorker.drain();
  return datasetId;
}

const complete = (token: string, appId: string, variables: Record<string, unknown> = {}) =>
  t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(token), payload: { appId, variables, detail: true, messages: [{ role: 'user', content: 'wifi password' }] } });

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  const owner = await createUser(t, { username: 'dd-owner', password: 'password-dd1' });
  await createUser(t, { username: 'dd-editor', password: 'password-dd2', teamId: owner.teamId, role: 'member', permission: 6 });
  ownerToken = await login(t, 'dd-owner', 'password-dd1');
  editorToken = await login(t, 'dd-editor', 'password-dd2');
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('a stored workflow naming a deleted dataset', () => {
  it('searches the datasets left and answers from them', async () => {
    const doomed = await datasetWith('Doomed', 'The old wifi password was daisy-7.');
    const kept = await datasetWith('Kept', 'The wifi password is tulip-42.');
    const appId = await createPublishedApp(t, ownerToken, 'KB bot', searchGraph([{ datasetId: doomed }, { datasetId: kept }]));
    expect((await complete(ownerToken, appId)).statusCode).toBe(200);
    await ok(t, ownerToken, 'DELETE', '/core/dataset/delete', { id: doomed });

    const after = await complete(ownerToken, appId);
    expect(after.statusCode, after.body).toBe(200);
    expect(after.body).toContain('tulip-42');
    expect(after.body).not.toContain('daisy-7');
  });

  it('answers with no quotes once every dataset it names is gone', async () => {
    const only = await datasetWith('Only', 'The door code is 5512.');
    const appId = await createPublishedApp(t, ownerToken, 'Lonely bot', searchGraph([{ datasetId: only }]));
    await ok(t, ownerToken, 'DELETE', '/core/dataset/delete', { id: only });

    const after = await complete(ownerToken, appId);
    expect(after.statusCode, after.body).toBe(200);
    const search = (after.json().responseData as { moduleType: string; quoteList?: unknown[] }[]).find((r) => r.moduleType === 'datasetSearchNode');
    expect(search?.quoteList).toEqual([]);
  });

  it('still refuses a dataset that stands but the app owner may not read', async () => {
    const secret = await datasetWith('Secret', 'The vault code is 7741.');
    const gone = await datasetWith('Gone', 'Nothing to see.');
    const ownersApp = await createPublishedApp(t, ownerToken, 'Vault bot', searchGraph([{ datasetId: gone }, { datasetId: secret }]));
    await ok(t, ownerToken, 'POST', '/core/app/update', { appId: ownersApp, defaultPermission: 6 });
    // A copy is the editor's own app: it reads with his rights, which do not reach the secret dataset.
    const { appId: copy } = await ok(t, editorToken, 'POST', '/core/app/copy', { appId: ownersApp });
    await ok(t, ownerToken, 'DELETE', '/core/dataset/delete', { id: gone });

    const viaCopy = await complete(editorToken, copy);
    expect(viaCopy.statusCode).toBe(403);
    expect(viaCopy.body).toContain('unAuthDataset');
    expect(viaCopy.body).not.toContain('7741');
  });

  it('keeps the not-found error for a deleted dataset given at run time', async () => {
    const wiredGraph = searchGraph(['VARIABLE_NODE_ID', 'datasetList']);
    const appId = await createPublishedApp(t, ownerToken, 'Wired bot', wiredGraph);
    const passing = await datasetWith('Passing', 'Short-lived.');
    await ok(t, ownerToken, 'DELETE', '/core/dataset/delete', { id: passing });

    const wired = await complete(ownerToken, appId, { datasetList: [{ datasetId: passing }] });
    expect(wired.statusCode).toBe(404);
    expect(wired.body).toContain('unExistDataset');
  });
});
