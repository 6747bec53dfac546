/**
 * Channel turns run after the channel got its answer (the channels redeliver an event that is
 * not answered within seconds), so nothing awaits them: they are tracked instead (deferred work).
 * The event is already acknowledged and its id claimed, so no channel retries a turn cut off: a
 * shutdown waits for running turns as long as the process's own shutdown bound allows.
 */
import { createDeferredWork } from '../../../infra/deferred-work.js';

/** What a close still needs once channel turns are waited for: closing the database and exiting. */
const CLOSE_MARGIN_MS = 2_000;

/**
 * How long channel turns may run on once a close began: the process's shutdown bound
 * (SHUTDOWN_TIMEOUT_MS, after which server.ts exits anyway) less the margin, but at least half of it.
 */
export function channelDrainBudgetMs(shutdownTimeoutMs: number): number {
  return Math.max(shutdownTimeoutMs - CLOSE_MARGIN_MS, Math.floor(shutdownTimeoutMs / 2));
}

export interface ChannelTurns {
  /** Runs `work` now, tracked until it settles; its failure goes to the tracker's `onFailure`. */
  start(work: () => Promise<void>): void;
  /** True once the app began closing: an event then is refused before its id is claimed. */
  readonly closing: boolean;
  /** Marks the start of a close (preClose): the drain budget counts from here. */
  beginClose(): void;
  /** Resolves once every running turn settled, or when the budget counted from beginClose ran out. */
  drain(): Promise<void>;
}

export function createChannelTurns(onFailure: (error: unknown) => void, budgetMs: number): ChannelTurns {
  const turns = createDeferredWork(onFailure);
  let deadline: number | undefined;
  const beginClose = () => {
    deadline ??= performance.now() + budgetMs;
  };
  return {
    start: (work) => turns.now(work),
    get closing() {
      return deadline !== undefined;
    },
    beginClose,
    async drain() {
      beginClose();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, Math.max(0, (deadline ?? 0) - performance.now()));
      });
      await Promise.race([turns.flush(), late]);
      clearTimeout(timer);
    },
  };
}
