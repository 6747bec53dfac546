/**
 * Custom feedback the customFeedback plugin endpoint receives from a workflow run: saved with
 * the answer item of a turn still running in this process, else appended to the stored item,
 * tried again once a minute later when that item is not there yet.
 */
import { createDeferredWork } from '../../infra/deferred-work.js';
import type { SelfCallScope } from '../../infra/self-call-token.js';
import type { ChatRepo } from './chat.repo.js';
import type { RunningTurnFeedbacks } from './running-turn-feedbacks.js';

/** The reference writes the feedback 60 s later, once the answer item has been saved. */
const FEEDBACK_RETRY_MS = 60_000;

export function createCustomFeedbacks(deps: {
  repo: Pick<ChatRepo, 'appendCustomFeedback'>;
  running: Pick<RunningTurnFeedbacks, 'listOf'>;
  onFailure: (error: unknown) => void;
}) {
  const writes = createDeferredWork(deps.onFailure);
  return {
    /** Adds `text` to the answer item `scope` names (nothing without ids or text); returns before it is written. */
    append(scope: SelfCallScope, text: string): void {
      const { teamId, appId, chatId, dataId } = scope;
      if (!appId || !chatId || !dataId || !text) return;
      // A turn's own call comes back to its process over loopback: the text is saved with the answer
      // item the turn has not written yet. Otherwise (a turn ended or of another process) it goes into the stored item.
      const running = deps.running.listOf(scope);
      if (running) {
        running.push(text);
        return;
      }
      const attempt = () => deps.repo.appendCustomFeedback(teamId, appId, chatId, dataId, text);
      writes.now(async () => {
        if (!(await attempt())) writes.later(FEEDBACK_RETRY_MS, attempt);
      });
    },
    /**
     * Makes the retries still waiting now, and waits for every write: called when the app closes,
     * before the database client does. The requests in flight have ended by then, so the answer
     * item is saved if it ever will be, and the feedback is kept rather than dropped.
     */
    flush: () => writes.flush(),
  };
}

export type CustomFeedbacks = ReturnType<typeof createCustomFeedbacks>;
