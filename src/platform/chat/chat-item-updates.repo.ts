/**
 * Updates of a stored chat answer item after its insert (feedbacks, annotations, a continuation's
 * answer), each under a lock named by the item: FerretDB applies each update (a `$push` too) as
 * read-then-write of the whole document, so two at once could undo each other's custom feedbacks
 * or answer (docs/decisions.md#concurrency).
 */
import type { Collection, Db } from 'mongodb';
import { normaliseValue } from '../../domain/workflow/chat-values.js';
import type { ChatValue } from '../../domain/workflow/types.js';
import { createMongoLocks } from '../../infra/mongo-lock.js';
import { isObjectIdHex } from '../../infra/mongo.js';
import { oid } from '../../infra/plain-record.js';
import { decodeFromStorage, encodeForStorage } from '../../infra/storage-codec.js';
import type { ChatItemDoc, StoredChatItem } from './chat.repo.js';

/** A continuation's additions to the AI item that asked its interactive node. */
export interface ContinuationAnswer {
  value: ChatValue[];
  responseData: Record<string, unknown>[];
  customFeedbacks: string[];
}

const ITEM_BUSY = 'Another change to this chat answer is in progress, try again';

/** `items`: the `chatitems` collection (chat.repo.ts owns it and spreads these into its repository). */
export function createChatItemUpdates(db: Db, items: Collection<StoredChatItem>) {
  const locks = createMongoLocks(db);
  // Named by the ids every writer has (a JSON array: client-chosen ids cannot run into one another;
  // the app id as the database spells it, whatever case the caller used).
  const underItemLock = <T>(appId: string, chatId: string, dataId: string, write: () => Promise<T>): Promise<T> =>
    locks.withLock(
      `chatitem:${JSON.stringify([oid(appId).toHexString(), chatId, dataId])}`,
      async (lock) => {
        lock.assertHeld();
        return write();
      },
      ITEM_BUSY,
    );

  return {
    /**
     * Appends a continuation's answer to the AI item whose value entry `at` is the interactive
     * node it answered, to the item as stored now (not as the turn read it before its run): what
     * was written meanwhile (feedbacks, another continuation's answer) stays. The selection is
     * recorded only while that node is still the item's last entry; a second continuation of the
     * same node (a double submit) keeps the first's selection and adds its answer after the first's.
     */
    async appendContinuation(item: Pick<ChatItemDoc, '_id' | 'appId' | 'chatId' | 'dataId'>, at: number, userSelectedVal: string, answer: ContinuationAnswer): Promise<void> {
      const _id = oid(item._id);
      await underItemLock(item.appId, item.chatId, item.dataId, async () => {
        const doc = await items.findOne({ _id }, { projection: { value: 1 } });
        if (!doc) return;
        const value = normaliseValue(decodeFromStorage(doc.value));
        const asked = value[at];
        if (value.length === at + 1 && asked?.type === 'interactive') asked.interactive.params.userSelectedVal = userSelectedVal;
        // The value whole (read under the lock), as the selection sits inside it; the others grow by `$push`.
        const push: Record<string, { $each: unknown[] }> = {};
        if (answer.responseData.length > 0) push.responseData = { $each: encodeForStorage(answer.responseData) as unknown[] };
        if (answer.customFeedbacks.length > 0) push.customFeedbacks = { $each: answer.customFeedbacks };
        await items.updateOne({ _id }, { $set: { value: encodeForStorage([...value, ...answer.value]) as ChatValue[] }, ...(Object.keys(push).length > 0 ? { $push: push } : {}) });
      });
    },

    async setFeedback(appId: string, chatId: string, dataId: string, good: string | undefined, bad: string | undefined): Promise<boolean> {
      const set: Record<string, string> = {};
      const unset: Record<string, ''> = {};
      if (good !== undefined) set.userGoodFeedback = good;
      else unset.userGoodFeedback = '';
      if (bad !== undefined) set.userBadFeedback = bad;
      else unset.userBadFeedback = '';
      const update = { ...(Object.keys(set).length ? { $set: set } : {}), $unset: unset };
      return underItemLock(appId, chatId, dataId, async () => (await items.updateOne({ appId: oid(appId), chatId, dataId }, update)).matchedCount > 0);
    },

    /** The annotation of an answer from the app logs (the reference's adminFeedback). */
    async setAdminFeedback(appId: string, chatId: string, dataId: string, feedback: { datasetId: string; collectionId?: string; dataId: string; q: string; a?: string }): Promise<boolean> {
      return underItemLock(appId, chatId, dataId, async () => (await items.updateOne({ appId: oid(appId), chatId, dataId }, { $set: { adminFeedback: feedback } })).matchedCount > 0);
    },

    /** Answers whether the item exists (the customFeedback plugin retries once when not yet saved). */
    async appendCustomFeedback(teamId: string, appId: string, chatId: string, dataId: string, text: string): Promise<boolean> {
      if (!isObjectIdHex(appId) || !isObjectIdHex(teamId)) return false;
      const filter = { teamId: oid(teamId), appId: oid(appId), chatId, dataId };
      return underItemLock(appId, chatId, dataId, async () => (await items.updateOne(filter, { $push: { customFeedbacks: text } })).matchedCount === 1);
    },

    /**
     * Removes one custom feedback by index (4.8.12 behaviour: no null hole is left). The list is
     * read and written back under the item's lock, which every other write of the item takes.
     */
    async closeCustomFeedback(appId: string, chatId: string, dataId: string, index: number): Promise<boolean> {
      return underItemLock(appId, chatId, dataId, async () => {
        const item = await items.findOne({ appId: oid(appId), chatId, dataId }, { projection: { customFeedbacks: 1 } });
        if (!item) return false;
        const list = [...(item.customFeedbacks ?? [])];
        if (index < list.length) list.splice(index, 1);
        await items.updateOne({ _id: item._id }, { $set: { customFeedbacks: list.filter((entry) => entry !== null) } });
        return true;
      });
    },
  };
}
