import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { call, ok } from './apps-helpers.js';

/** A dataset that stops inheriting its folder's rights is judged on its own, everywhere. */
let t: TestApp;
let ownerToken: string;
let memberToken: string;
let folderId: string;
let privateId: string;

async function datasetWith(name: string, parentId: string, text: string): Promise<string> {
  const datasetId = await ok(t, ownerToken, 'POST', '/core/dataset/create', { name, parentId });
  const collectionId = await ok(t, ownerToken, 'POST', '/core/dataset/collection/create', { datasetId, name: `${name} notes`, type: 'virtual' });
  await ok(t, ownerToken, 'POST', '/core/dataset/data/insertData', { collectionId, q: text });
  return datasetId;
}

const exportAll = (token: string, datasetId: string) => t.app.inject({ method: 'GET', url: `/api/core/dataset/exportAll?datasetId=${datasetId}`, headers: authHeaders(token) });

beforeAll(async () => {
  t = await buildTestApp();
  const owner = await createUser(t, { username: 'inherit-owner', password: 'password-i1' });
  await createUser(t, { username: 'inherit-member', password: 'password-i2', teamId: owner.teamId, role: 'member', permission: 4 });
  ownerToken = await login(t, 'inherit-owner', 'password-i1');
  memberToken = await login(t, 'inherit-member', 'password-i2');
  folderId = await ok(t, ownerToken, 'POST', '/core/dataset/create', { name: 'Shared folder', type: 'folder' });
  await ok(t, ownerToken, 'POST', '/core/dataset/update', { id: folderId, defaultPermission: 6 });
  privateId = await datasetWith('Payroll', folderId, 'PAYROLL-SECRET row');
  await datasetWith('Handbook', folderId, 'HANDBOOK-PUBLIC row');
});

afterAll(async () => {
  await t?.close();
});

describe('a dataset made private inside a shared folder', () => {
  it('is private at once: a default of 0 breaks the inheritance of a dataset that showed its folder value', async () => {
    const inherited = await ok(t, ownerToken, 'GET', '/core/dataset/detail', { id: privateId });
    expect([inherited.inheritPermission, inherited.defaultPermission]).toEqual([true, 6]);
    expect((await call(t, memberToken, 'GET', '/core/dataset/detail', { id: privateId })).status).toBe(200);

    await ok(t, ownerToken, 'POST', '/core/dataset/update', { id: privateId, defaultPermission: 0 });
    const own = await ok(t, ownerToken, 'GET', '/core/dataset/detail', { id: privateId });
    expect([own.inheritPermission, own.defaultPermission]).toEqual([false, 0]);
    const refused = await call(t, memberToken, 'GET', '/core/dataset/detail', { id: privateId });
    expect([refused.status, refused.body.statusText]).toEqual([403, 'unAuthDataset']);
  });

  it('is left out of the folder export of a member who may write the folder but not it', async () => {
    const member = await exportAll(memberToken, folderId);
    expect(member.statusCode, member.body).toBe(200);
    expect(member.body).toContain('HANDBOOK-PUBLIC');
    expect(member.body).not.toContain('PAYROLL-SECRET');
    // The owner exports both; the member cannot export the private dataset itself.
    const owner = await exportAll(ownerToken, folderId);
    expect(owner.body).toContain('PAYROLL-SECRET');
    expect(owner.body).toContain('HANDBOOK-PUBLIC');
    expect((await exportAll(memberToken, privateId)).statusCode).toBe(403);
  });
});
