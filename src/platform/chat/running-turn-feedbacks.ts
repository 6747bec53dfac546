/**
 * The custom-feedback lists of the chat turns running in this process, by the answer item they
 * will save. The customFeedback endpoint is called (over loopback) by a turn's own HTTP node
 * while that turn runs, before its answer item exists: pushed onto the turn's list, the text is
 * saved with the item, as the customFeedback node's is. A scope not found here is a turn of
 * another process (or none): the endpoint writes into the stored item instead.
 */
import type { SelfCallScope } from '../../infra/self-call-token.js';

export interface RunningTurnFeedbacks {
  /** Registers the list a running turn saves on its answer item; the returned function removes it. */
  open(scope: SelfCallScope, list: string[]): () => void;
  /** The list of the turn running in this process that saves `scope`'s answer item, if any. */
  listOf(scope: SelfCallScope): string[] | undefined;
}

/** A JSON array: ids chosen by callers (chatId, dataId) cannot run into one another. */
const keyOf = ({ teamId, appId, chatId, dataId }: SelfCallScope) => JSON.stringify([teamId, appId, chatId, dataId]);

export function createRunningTurnFeedbacks(): RunningTurnFeedbacks {
  const lists = new Map<string, string[]>();
  return {
    open(scope, list) {
      const key = keyOf(scope);
      lists.set(key, list);
      return () => {
        // A second turn of the same ids may have registered since: only this turn's entry goes.
        if (lists.get(key) === list) lists.delete(key);
      };
    },
    listOf: (scope) => lists.get(keyOf(scope)),
  };
}
