/**
 * Channel turns run after the channel got its answer (the channels redeliver an event that is
 * not answered within seconds), so nothing awaits them: they are tracked instead (deferred work),
 * and a shutdown waits a bounded time for them to send their answers before the database closes.
 */
import { createDeferredWork } from '../../../infra/deferred-work.js';

/** How long a shutdown waits for channel turns still running (their answers are sent then). */
export const CHANNEL_DRAIN_MS = 5_000;

export interface ChannelTurns {
  /** Runs `work` now, tracked until it settles; its failure goes to the tracker's `onFailure`. */
  start(work: () => Promise<void>): void;
  /** Resolves once every running turn settled, or after `boundMs`, whichever is first. */
  drain(boundMs?: number): Promise<void>;
}

export function createChannelTurns(onFailure: (error: unknown) => void): ChannelTurns {
  const turns = createDeferredWork(onFailure);
  return {
    start: (work) => turns.now(work),
    async drain(boundMs = CHANNEL_DRAIN_MS) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, boundMs);
      });
      await Promise.race([turns.flush(), late]);
      clearTimeout(timer);
    },
  };
}
