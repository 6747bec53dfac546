import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { cli } from '../fixtures/cluster/helpers.js';

let t: TestApp;
const PASSWORD = 'Emoji-pass1😀𞤢';
const CLIENT = 'client_id=kubesphere&client_secret=kubesphere';

const post = (payload: string) =>
  t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload });

beforeAll(async () => {
  t = await buildTestApp();
  await cli(t.app, ['user', 'add', '--username', 'erin', '--email', 'erin@example.com', '--password', PASSWORD]);
});

afterAll(async () => {
  await t.close();
});

describe('POST /oauth/token with characters above U+FFFF', () => {
  it('grants the password sent raw (as curl -d sends it), percent-encoded, or mixed', async () => {
    for (const password of [PASSWORD, encodeURIComponent(PASSWORD), `Emoji-pass1${encodeURIComponent('😀')}𞤢`]) {
      const response = await post(`grant_type=password&username=erin&password=${password}&${CLIENT}`);
      expect(response.statusCode, `${password}: ${response.body}`).toBe(200);
      expect(response.json().access_token).toEqual(expect.any(String));
    }
  });

  it('still refuses a different astral character', async () => {
    const response = await post(`grant_type=password&username=erin&password=Emoji-pass1😁𞤢&${CLIENT}`);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ error: 'invalid_grant' });
  });
});
