import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';

/**
 * A body over the limit its caller earned (auth/proven-caller-bodies.ts) is a 413, and the rest
 * of it, counted after the framework already answered from its declared length, raises nothing
 * the process does not catch (an uncaught stream error ends a production process).
 */
let t: TestApp;
let token: string;

beforeAll(async () => {
  t = await buildTestApp({ API_BODY_LIMIT_BYTES: String(1_500_000) });
  await createUser(t, { username: 'bodies', password: 'password-b1' });
  token = await login(t, 'bodies', 'password-b1');
});
afterAll(async () => {
  await t?.close();
});

/** Runs `send`, then lets the streams settle; answers what it answered and the errors no one caught meanwhile. */
async function withUncaught<T>(send: () => Promise<T>): Promise<{ answer: T; uncaught: unknown[] }> {
  const uncaught: unknown[] = [];
  const record = (error: unknown) => uncaught.push(error);
  process.on('uncaughtException', record);
  try {
    const answer = await send();
    await new Promise((resolve) => setTimeout(resolve, 200));
    return { answer, uncaught };
  } finally {
    process.off('uncaughtException', record);
  }
}

describe('a body past its caller’s limit', () => {
  it.each([
    ['a session past API_BODY_LIMIT_BYTES', () => authHeaders(token), 1_600_000],
    ['no credential past BODY_LIMIT_BYTES', () => ({}), 1_100_000],
  ])('%s: 413, and nothing uncaught while the rest of the body is counted', async (_case, headers, size) => {
    const payload = JSON.stringify({ input: 'x'.repeat(size) });
    const { answer, uncaught } = await withUncaught(() =>
      t.app.inject({ method: 'POST', url: '/api/v1/embeddings', headers: { ...headers(), 'content-type': 'application/json' }, payload }),
    );
    expect(answer.statusCode, answer.body.slice(0, 200)).toBe(413);
    expect(uncaught.map(String)).toEqual([]);
    // The service still answers.
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/embeddings', headers: { ...authHeaders(token), 'content-type': 'application/json' }, payload: { input: 'still here' } })).statusCode).toBe(200);
  });
});
