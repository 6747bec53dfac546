import { type Db, ObjectId } from 'mongodb';
import { groupBy } from '../../domain/group-by.js';
import { oid } from '../../infra/plain-record.js';
import { CHAT_ITEMS, CHATS } from './chat.repo.js';

export interface ChatLogItem {
  _id: string;
  id: string;
  title: string;
  source: string;
  time: Date;
  messageCount: number;
  userGoodFeedbackCount: number;
  userBadFeedbackCount: number;
  customFeedbacksCount: number;
  markCount: number;
  outLinkUid?: string;
  tmbId?: string;
}

const asText = (value: unknown) => (value instanceof ObjectId ? value.toHexString() : typeof value === 'string' ? value : undefined);

/** An app's chat logs (the app log page): chats with their items' feedback counts. */
export function createChatLogsRepo(db: Db) {
  return {
    async page(input: { teamId: string; appId: string; from: Date; to: Date; skip: number; limit: number }): Promise<{ total: number; list: ChatLogItem[] }> {
      const filter = { teamId: oid(input.teamId), appId: oid(input.appId), updateTime: { $gte: input.from, $lte: input.to } };
      const chats = db.collection(CHATS);
      // The count runs alongside the page and the items (it is needed but for the last page):
      // FerretDB 1.24 reads all the app's chats of the window for each, sorting them for the page.
      const counting = chats.countDocuments(filter);
      counting.catch(() => undefined);
      const docs = await chats.find(filter).sort({ updateTime: -1, _id: -1 }).skip(input.skip).limit(input.limit).toArray();
      const chatIds = docs.map((d) => d.chatId).filter((c): c is string => typeof c === 'string');
      // One equality read per chat of the page, not one `$in`: FerretDB 1.24 passes no `$in` down,
      // so that read every item of the app (1.3 s at 10,000 items); each of these is an index read
      // there, as on MongoDB (the `appId, chatId` index).
      const itemsOfChat = (chatId: string) =>
        db
          .collection(CHAT_ITEMS)
          .find({ teamId: oid(input.teamId), appId: oid(input.appId), chatId }, { projection: { chatId: 1, userGoodFeedback: 1, userBadFeedback: 1, customFeedbacks: 1, adminFeedback: 1 } })
          .toArray();
      const items = (await Promise.all(chatIds.map(itemsOfChat))).flat();
      const itemsOf = groupBy(items, (item) => item.chatId);
      const list = docs.map((chat) => {
        const mine = itemsOf.get(chat.chatId) ?? [];
        return {
          _id: chat._id.toHexString(),
          id: String(chat.chatId ?? ''),
          title: String(chat.title ?? ''),
          source: String(chat.source ?? ''),
          time: chat.updateTime as Date,
          messageCount: mine.length,
          userGoodFeedbackCount: mine.filter((i) => i.userGoodFeedback).length,
          userBadFeedbackCount: mine.filter((i) => i.userBadFeedback).length,
          customFeedbacksCount: mine.filter((i) => Array.isArray(i.customFeedbacks) && i.customFeedbacks.length > 0).length,
          markCount: mine.filter((i) => i.adminFeedback).length,
          outLinkUid: asText(chat.outLinkUid),
          tmbId: asText(chat.tmbId),
        };
      });
      return { total: await counting, list };
    },
  };
}

export type ChatLogsRepo = ReturnType<typeof createChatLogsRepo>;
