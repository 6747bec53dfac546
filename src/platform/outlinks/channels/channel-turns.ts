/**
 * Channel turns run after the channel got its answer (the channels redeliver an event that is
 * not answered within seconds), so nothing awaits them: they are tracked instead (deferred work).
 * Each turn is a stored job (channel-jobs.ts): a shutdown waits for running turns as long as the
 * process's own shutdown bound allows, then tells those still running that it stopped waiting
 * (`closed`): they stop renewing their leases, and another replica takes them over.
 */
import { setMaxListeners } from 'node:events';
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
  /**
   * Runs `work` now, tracked until it settles; its failure goes to the tracker's `onFailure`.
   * `closed` aborts when a close stopped waiting for it (the drain budget ran out).
   */
  start(work: (closed: AbortSignal) => Promise<void>): void;
  /** True once the app began closing: an event then is refused before its id is claimed, and no job is taken over. */
  readonly closing: boolean;
  /** Marks the start of a close (preClose): the drain budget counts from here. */
  beginClose(): void;
  /** Resolves once every running turn settled, or when the budget counted from beginClose ran out. */
  drain(): Promise<void>;
}

export function createChannelTurns(onFailure: (error: unknown) => void, budgetMs: number): ChannelTurns {
  const turns = createDeferredWork(onFailure);
  const closed = new AbortController();
  // Every running turn listens on it (CHANNEL_TURNS_MAX bounds them): past Node's 10 it warned of a leak that is none.
  setMaxListeners(0, closed.signal);
  let deadline: number | undefined;
  const beginClose = () => {
    deadline ??= performance.now() + budgetMs;
  };
  return {
    start: (work) => turns.now(() => work(closed.signal)),
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
      // Turns still running are left to the replicas that take over their lapsed jobs.
      closed.abort();
    },
  };
}
