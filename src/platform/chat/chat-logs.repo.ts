import { type Db, ObjectId } from 'mongodb';
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

/** The types of an item's feedback fields (`$type`: `missing` when absent). */
interface FeedbackTypes {
  good: string;
  bad: string;
  custom: string;
  mark: string;
}

type FeedbackCounts = Pick<ChatLogItem, 'messageCount' | 'userGoodFeedbackCount' | 'userBadFeedbackCount' | 'customFeedbacksCount' | 'markCount'>;

const NO_ITEMS: FeedbackCounts = { messageCount: 0, userGoodFeedbackCount: 0, userBadFeedbackCount: 0, customFeedbacksCount: 0, markCount: 0 };

/** A feedback field counts when it is set: present and not null (the reference's `$ifNull`). */
const isSet = (type: string) => type !== 'missing' && type !== 'null' && type !== 'undefined';

/** An app's chat logs (the app log page): chats with their items' feedback counts. */
export function createChatLogsRepo(db: Db) {
  const items = db.collection(CHAT_ITEMS);

  /**
   * One chat's counts without reading its items: the database groups them by the types of their
   * feedback fields (FerretDB 1.24 takes `$type` and `$sum` in a `$group`, not `$cond`, `$size`
   * or `$facet`), which answers a few small documents instead of every item. An equality on the
   * chat, not an `$in` over the page: FerretDB 1.24 passes no `$in` down, so that read every item
   * of the app; this one is an index read there, as on MongoDB (the `appId, chatId` index).
   */
  async function countsOf(teamId: ObjectId, appId: ObjectId, chatId: string): Promise<FeedbackCounts> {
    const scope = { teamId, appId, chatId };
    const groups = await items
      .aggregate<{ _id: FeedbackTypes; items: number }>([
        { $match: scope },
        {
          $group: {
            _id: { good: { $type: '$userGoodFeedback' }, bad: { $type: '$userBadFeedback' }, custom: { $type: '$customFeedbacks' }, mark: { $type: '$adminFeedback' } },
            items: { $sum: 1 },
          },
        },
      ])
      .toArray();
    const count = (counted: (types: FeedbackTypes) => boolean) => groups.reduce((sum, group) => (counted(group._id) ? sum + group.items : sum), 0);
    // Custom feedbacks count when the list has an entry; an empty list (a closed feedback, an
    // interactive turn's answer) has the same type, so only then does the database count them.
    const customFeedbacksCount = groups.some((group) => group._id.custom === 'array')
      ? await items.countDocuments({ ...scope, customFeedbacks: { $type: 'array' }, 'customFeedbacks.0': { $exists: true } })
      : 0;
    return {
      messageCount: count(() => true),
      userGoodFeedbackCount: count((types) => isSet(types.good)),
      userBadFeedbackCount: count((types) => isSet(types.bad)),
      customFeedbacksCount,
      markCount: count((types) => isSet(types.mark)),
    };
  }

  return {
    async page(input: { teamId: string; appId: string; from: Date; to: Date; skip: number; limit: number }): Promise<{ total: number; list: ChatLogItem[] }> {
      const teamId = oid(input.teamId);
      const appId = oid(input.appId);
      const filter = { teamId, appId, updateTime: { $gte: input.from, $lte: input.to } };
      const chats = db.collection(CHATS);
      // The count runs alongside the page and the items (it is needed but for the last page):
      // FerretDB 1.24 reads all the app's chats of the window for each, sorting them for the page.
      const counting = chats.countDocuments(filter);
      counting.catch(() => undefined);
      const docs = await chats.find(filter).sort({ updateTime: -1, _id: -1 }).skip(input.skip).limit(input.limit).toArray();
      // A chat id of another type (not written by this service) has no items this reads.
      const counts = await Promise.all(docs.map((chat) => (typeof chat.chatId === 'string' ? countsOf(teamId, appId, chat.chatId) : NO_ITEMS)));
      const list = docs.map((chat, index) => ({
        _id: chat._id.toHexString(),
        id: String(chat.chatId ?? ''),
        title: String(chat.title ?? ''),
        source: String(chat.source ?? ''),
        time: chat.updateTime as Date,
        ...(counts[index] as FeedbackCounts),
        outLinkUid: asText(chat.outLinkUid),
        tmbId: asText(chat.tmbId),
      }));
      return { total: await counting, list };
    },
  };
}

export type ChatLogsRepo = ReturnType<typeof createChatLogsRepo>;
