// Shared by the dataset bench scripts: synthetic text and a logged-in platform client.
import { BENCH_SECRETS } from './lib.mjs';

let seed = 7;
export const random = () => {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return seed / 2 ** 32;
};
const vocabulary = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}${'aeiou'[i % 5]}${'nrst'[i % 4]}`);
const word = () => vocabulary[Math.floor(vocabulary.length * random() ** 3)];
/** A chunk of 40–80 Zipf-distributed words (~400 characters). */
export const chunkText = (i) => `Chunk ${i}. ${Array.from({ length: 40 + Math.floor(random() * 40) }, word).join(' ')}.`;

/** Logs in as root through the real route; returns a JSON caller for /api, the token and root's user detail. */
export async function rootClient(baseUrl) {
  const login = await fetch(`${baseUrl}/api/support/user/account/loginByPassword`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'root', password: BENCH_SECRETS.DEFAULT_ROOT_PSW }),
  });
  const { token, user } = (await login.json()).data;
  const call = async (method, path, body) => {
    const response = await fetch(`${baseUrl}/api${path}`, {
      method,
      headers: { token, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = await response.json();
    if (json.code !== 200) throw new Error(`${method} ${path}: ${response.status} ${json.message}`);
    return json.data;
  };
  return { token, user, call };
}

/**
 * Times a write route over fresh targets: `timed(run)` calls `run` once to warm up, then 4 times
 * in turn, each with the next of `targets` (so no call repeats another's work); answers the
 * milliseconds of the 4, space-separated.
 */
export function timerOver(targets) {
  let next = 0;
  return async (run) => {
    await run(targets[next++]);
    const times = [];
    for (let r = 0; r < 4; r++) {
      const started = performance.now();
      await run(targets[next++]);
      times.push(Math.round(performance.now() - started));
    }
    return times.join(' ');
  };
}
