import type { FastifyInstance } from 'fastify';
import { backoffDelay, startPeriodicTask } from '../../infra/backoff.js';
import { describeError } from '../../infra/database-errors.js';
import type { AppsCore, AppsDeps } from './apps.service.js';

const RETRY = { firstMs: 1_000, maxMs: 30_000 };
const SWEEP_INTERVAL_MS = 60_000;

/** Settles the inserts whose lease ran out (crashed or failed); returns how many. */
export async function settleExpiredInserts(core: AppsCore, deps: AppsDeps, options: { createdBefore?: Date; stopped?: () => boolean } = {}): Promise<number> {
  let settled = 0;
  for (const insert of await deps.inserts.expired(options.createdBefore)) {
    if (options.stopped?.()) break;
    await core.settleInsert(insert);
    settled += 1;
  }
  return settled;
}

/**
 * Settles app inserts a crash interrupted. Nothing of them can be seen (the app document is
 * their last write), so this runs in the background: at start, for the records already there
 * once their leases (15 s) have run out, which gives back their plan room; then every minute,
 * for inserts a database error stopped in a live process.
 */
export function registerAppInsertResume(app: FastifyInstance, core: AppsCore, deps: AppsDeps): void {
  let closing = false;
  let sweep: { stop(): void } | undefined;
  let wake: (() => void) | undefined;
  let running: Promise<void> | undefined;
  const stopped = () => closing;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  app.startup.add('apps: settle interrupted inserts', async () => {
    const startedAt = new Date();
    running = (async () => {
      for (let failures = 0; !closing; ) {
        try {
          const settled = await settleExpiredInserts(core, deps, { createdBefore: startedAt, stopped });
          if (settled > 0) app.log.info(`settled ${settled} interrupted app insert(s)`);
          // Records of a crashed process still inside their lease: wait for it to run out.
          const lastLease = await deps.inserts.lastLeaseEnd(startedAt);
          if (!lastLease) return;
          failures = 0;
          await pause(Math.max(0, lastLease.getTime() - Date.now()) + 100);
        } catch (error) {
          if (closing) return;
          failures += 1;
          app.opsMetrics.databaseError('app-insert-resume', error);
          const delay = backoffDelay(failures, RETRY);
          app.log.warn(`settling interrupted app inserts failed (${failures} in a row, next try in ${Math.round(delay / 1000)} s): ${describeError(error)}`);
          await pause(delay);
        }
      }
    })();
    sweep = startPeriodicTask({
      name: 'interrupted app insert sweep',
      intervalMs: SWEEP_INTERVAL_MS,
      task: () => settleExpiredInserts(core, deps, { stopped }),
      log: app.log,
      onFailure: (error) => app.opsMetrics.databaseError('app-insert-resume', error),
    });
  });
  app.addHook('preClose', async () => {
    closing = true;
    sweep?.stop();
    wake?.();
    await running;
  });
}
