/** A collaborator change naming someone outside the team is a 400 naming the field the route takes. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { call, createApp } from './apps-helpers.js';

let t: TestApp;
let owner: string;
let stranger: string;
let appId: string;

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t, { username: 'field-owner', password: 'password-1' });
  stranger = (await createUser(t, { username: 'field-stranger', password: 'password-1' })).tmbId;
  owner = await login(t, 'field-owner', 'password-1');
  appId = await createApp(t, owner, { name: 'App' });
});

afterAll(async () => {
  await t?.close();
});

describe('collaborator routes with another team’s member', () => {
  it.each([
    ['/core/app/collaborator/delete', 'tmbId', 'DELETE', () => ({ appId, tmbId: stranger })],
    ['/proApi/core/app/collaborator/delete', 'tmbId', 'DELETE', () => ({ appId, tmbId: stranger })],
    ['/proApi/core/app/collaborator/update', 'tmbIds', 'POST', () => ({ appId, tmbIds: [stranger], permission: 4 })],
  ])('%s names %s', async (url, field, method, input) => {
    const res = await call(t, owner, method, url, input());
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.message).toBe(`Invalid field '${field}': ${stranger} is not a member of this team`);
  });
});
