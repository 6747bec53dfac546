import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser } from '../helpers/platform.js';

/**
 * The old-password check of a password change is limited per session, apart from the account's
 * login limit: failed logins by name (anyone can send them) do not block a logged-in owner's
 * change, and guesses through one session are still bounded.
 */
let t: TestApp;
const WINDOW_MS = 10 * 60_000;
// Windows are aligned on the clock: the run happens a minute into one, so no test crosses a boundary.
const PINNED = (Math.floor(Date.now() / WINDOW_MS) + 1) * WINDOW_MS + 60_000;

const loginFrom = (username: string, password: string, remoteAddress: string) =>
  t.app.inject({ method: 'POST', url: '/api/support/user/account/loginByPassword', payload: { username, password }, remoteAddress });
const sessionOf = async (username: string, password: string, remoteAddress: string) => {
  const response = await loginFrom(username, password, remoteAddress);
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data.token as string;
};
const change = (token: string, oldPsw: string, newPsw: string) =>
  t.app.inject({ method: 'POST', url: '/api/support/user/account/updatePasswordByOld', headers: { token }, payload: { oldPsw, newPsw } });

beforeAll(async () => {
  t = await buildTestApp();
  t.app.identity.clock.now = () => PINNED;
});

afterAll(async () => {
  await t.close();
});

describe('password change and the login limit', () => {
  it("failed logins under the owner's name do not block the owner's password change", async () => {
    await createUser(t, { username: 'pw-victim', password: 'password-1' });
    const token = await sessionOf('pw-victim', 'password-1', '127.0.0.1');
    for (let i = 0; i < 10; i++) expect((await loginFrom('pw-victim', 'wrong-guess', `10.9.0.${i + 1}`)).statusCode).toBe(401);
    // The account's login limit is full for unknown addresses...
    expect((await loginFrom('pw-victim', 'password-1', '10.9.1.1')).statusCode).toBe(429);
    // ...but the owner's session proves who they are: the change goes through.
    const changed = await change(token, 'password-1', 'password-2');
    expect(changed.statusCode, changed.body).toBe(200);
    expect((await loginFrom('pw-victim', 'password-2', '10.9.1.1')).statusCode).toBe(200);
  });

  it('bounds old-password guesses through one session, without filling the login limit or other sessions', async () => {
    await createUser(t, { username: 'pw-guessed', password: 'password-1' });
    const stolen = await sessionOf('pw-guessed', 'password-1', '10.8.0.1');
    const owners = await sessionOf('pw-guessed', 'password-1', '10.8.0.2');
    for (let i = 0; i < 10; i++) expect((await change(stolen, `guess-${i}`, 'password-9')).statusCode).toBe(403);
    const refused = await change(stolen, 'password-1', 'password-9');
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ statusText: 'tooManyRequest', message: expect.stringMatching(/old password/) });
    // Logins from an address never used before are not held by the session's guesses.
    expect((await loginFrom('pw-guessed', 'password-1', '10.8.9.9')).statusCode).toBe(200);
    // The owner's own session still changes the password, which ends the guessing session.
    expect((await change(owners, 'password-1', 'password-2')).statusCode).toBe(200);
    expect((await change(stolen, 'password-2', 'password-3')).statusCode).toBe(401);
  });
});
