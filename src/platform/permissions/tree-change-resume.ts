import type { FastifyInstance } from 'fastify';
import { startPeriodicTask } from '../../infra/backoff.js';
import type { ResourcePermissionService } from './resource-permission.service.js';

/** A crashed holder's tree lock expires within its TTL (15 s); start-up keeps trying this long. */
const START_WAIT_MS = 30_000;
const SWEEP_INTERVAL_MS = 15_000;
/** The sweep leaves younger changes to the request that may still be writing them. */
const SWEEP_GRACE_MS = 10_000;

/**
 * Finishes the permission changes (moves, propagations) of `perms` that a crash left
 * unfinished: at start-up, before the service listens, so no request after a restart sees one
 * half done (waiting up to the TTL of the crashed process's tree lock); then every 15 s, for
 * changes a database error stopped in a live process. `label` names the resource ('apps').
 */
export function registerTreeChangeResume(app: FastifyInstance, label: string, perms: Pick<ResourcePermissionService, 'finishInterrupted'>): void {
  let closing = false;
  let sweep: { stop(): void } | undefined;
  app.startup.add(`${label}: finish interrupted permission changes`, async () => {
    const deadline = Date.now() + START_WAIT_MS;
    for (;;) {
      const { finished, busy } = await perms.finishInterrupted({ stopped: () => closing });
      if (finished > 0) app.log.info(`${label}: finished the interrupted permission changes of ${finished} team(s)`);
      if (busy === 0 || closing) break;
      // Busy past a crashed holder's TTL: a live replica holds the lock, and it finished the
      // changes before its own work; the sweep checks again.
      if (Date.now() > deadline) {
        app.log.warn(`${label}: ${busy} team tree lock(s) stayed busy; their holders finish the interrupted permission changes`);
        break;
      }
    }
    sweep = startPeriodicTask({
      name: `${label}: unfinished permission change sweep`,
      intervalMs: SWEEP_INTERVAL_MS,
      task: () => perms.finishInterrupted({ createdBefore: new Date(Date.now() - SWEEP_GRACE_MS), stopped: () => closing }),
      log: app.log,
      onFailure: (error) => app.opsMetrics.databaseError(`${label}-permission-resume`, error),
    });
  });
  app.addHook('preClose', async () => {
    closing = true;
    sweep?.stop();
  });
}
