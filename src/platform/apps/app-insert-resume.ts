import type { FastifyInstance } from 'fastify';
import { registerResumeTask } from '../../plugins/resume-task.js';
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
  registerResumeTask(app, {
    startupName: 'apps: settle interrupted inserts',
    resumeName: 'settling interrupted app inserts',
    sweepName: 'interrupted app insert sweep',
    source: 'app-insert-resume',
    retry: RETRY,
    sweepIntervalMs: SWEEP_INTERVAL_MS,
    async resume({ stopped, pause }, startedAt) {
      const settled = await settleExpiredInserts(core, deps, { createdBefore: startedAt, stopped });
      if (settled > 0) app.log.info(`settled ${settled} interrupted app insert(s)`);
      // Records of a crashed process still inside their lease: wait for it to run out.
      const lastLease = await deps.inserts.lastLeaseEnd(startedAt);
      if (!lastLease) return false;
      await pause(Math.max(0, lastLease.getTime() - Date.now()) + 100);
      return true;
    },
    sweep: (stopped) => settleExpiredInserts(core, deps, { stopped }),
  });
}
