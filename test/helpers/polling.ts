import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `done` every 20 ms until it holds, failing after `ms` (naming `what`) instead of at the test's timeout. */
export async function until(done: () => boolean | Promise<boolean>, what = 'the condition', ms = 15_000): Promise<void> {
  for (let waited = 0; !(await done()); waited += 20) {
    if (waited >= ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
