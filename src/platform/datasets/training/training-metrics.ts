import { Gauge, type Registry } from 'prom-client';
import type { TrainingRepo } from './training.repo.js';

interface QueueStats {
  queued: number;
  failed: number;
  oldestQueuedAt: Date | null;
}

/** How long the oldest item's time is reused while the queue stays non-empty (finding it reads the whole queue on FerretDB). */
export const OLDEST_RECHECK_MS = 60_000;

/**
 * Training queue gauges, read from MongoDB when Prometheus scrapes (so every replica reports the
 * shared queue): items by state from the queue's counts, and the age of the oldest queued item,
 * looked up again at most once a minute while the queue stays non-empty (at once when it was
 * empty; an emptied queue needs no look). When the database cannot answer, the gauges are left
 * empty rather than stale.
 */
export function registerTrainingQueueMetrics(deps: { registry: Registry; trainings: TrainingRepo; now: () => number; onError: (error: unknown) => void }) {
  let pending: Promise<QueueStats | null> | undefined;
  let oldest: { at: Date | null; checkedAt: number } | undefined;
  async function read(): Promise<QueueStats> {
    const figures = await deps.trainings.queueFigures();
    const now = deps.now();
    if (figures.queued === 0) oldest = { at: null, checkedAt: now };
    else if (!oldest?.at || now - oldest.checkedAt >= OLDEST_RECHECK_MS) oldest = { at: await deps.trainings.oldestQueuedAt(), checkedAt: now };
    return { ...figures, oldestQueuedAt: oldest.at };
  }
  // Both gauges collect concurrently during one scrape: they share one round of queries.
  const stats = () => {
    pending ??= read()
      .catch((error: unknown) => {
        deps.onError(error);
        return null;
      })
      .finally(() => {
        pending = undefined;
      });
    return pending;
  };

  new Gauge({
    name: 'training_queue_items',
    help: 'Items in the dataset training queue: queued (waiting or being processed) or failed (stopped after too many attempts)',
    labelNames: ['state'],
    registers: [deps.registry],
    async collect() {
      const current = await stats();
      this.reset();
      if (!current) return;
      this.set({ state: 'queued' }, current.queued);
      this.set({ state: 'failed' }, current.failed);
    },
  });

  new Gauge({
    name: 'training_queue_oldest_age_seconds',
    help: 'How long the oldest queued training item has waited (0 when the queue is empty)',
    registers: [deps.registry],
    async collect() {
      const current = await stats();
      this.reset();
      if (!current) return;
      this.set(current.oldestQueuedAt ? Math.max(0, (deps.now() - current.oldestQueuedAt.getTime()) / 1000) : 0);
    },
  });
}
