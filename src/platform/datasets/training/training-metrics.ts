import { Gauge, type Registry } from 'prom-client';
import type { TrainingRepo } from './training.repo.js';

type QueueStats = Awaited<ReturnType<TrainingRepo['queueStats']>>;

/**
 * Training queue gauges, read from MongoDB when Prometheus scrapes (so every replica reports the
 * shared queue): items by state, and the age of the oldest queued item. One query set per scrape;
 * when the database cannot answer, the gauges are left empty rather than stale.
 */
export function registerTrainingQueueMetrics(deps: { registry: Registry; trainings: TrainingRepo; now: () => number; onError: (error: unknown) => void }) {
  let pending: Promise<QueueStats | null> | undefined;
  // Both gauges collect concurrently during one scrape: they share one round of queries.
  const stats = () => {
    pending ??= deps.trainings
      .queueStats()
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
