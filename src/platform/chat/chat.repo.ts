/**
 * The only code touching `chats`, `chatitems` and `chat_input_guides` (reference collection
 * and field names); a chat's files go with it through the chat files repository. Free-form
 * fields go through the storage codec.
 */
import { type Db, type Filter, ObjectId } from 'mongodb';
import { normaliseValue } from '../../domain/workflow/chat-values.js';
import type { ChatValue } from '../../domain/workflow/types.js';
import { createGroupedInserter } from '../../infra/grouped-insert.js';
import { findPage } from '../../infra/find-page.js';
import { deleteEach, type IndexDeclaration, insertManyNew, isDuplicateKeyError } from '../../infra/mongo.js';
import { oid, oids, type Plain, plain } from '../../infra/plain-record.js';
import { decodeFromStorage, encodeForStorage } from '../../infra/storage-codec.js';
import type { ChatFilesRepo } from './chat-files.repo.js';
import { createChatItemUpdates } from './chat-item-updates.repo.js';

export type { ContinuationAnswer } from './chat-item-updates.repo.js';

export const CHATS = 'chats';
export const CHAT_ITEMS = 'chatitems';
export const CHAT_INPUT_GUIDES = 'chat_input_guides';

export const CHAT_INDEXES: IndexDeclaration[] = [
  // One chat document per chat id of an app: two first turns at once (a double send) write one.
  // Its prefix also serves lookups by chat id alone.
  { collection: CHATS, key: { chatId: 1, appId: 1 }, options: { unique: true } },
  { collection: CHATS, key: { tmbId: 1, appId: 1, top: -1, updateTime: -1 } },
  { collection: CHATS, key: { appId: 1, chatId: 1 } },
  // The app's chat logs (chat-logs.repo.ts): team and app, a time window, newest first, then `_id`.
  { collection: CHATS, key: { teamId: 1, appId: 1, updateTime: -1, _id: -1 } },
  { collection: CHATS, key: { shareId: 1, outLinkUid: 1, updateTime: -1, source: 1 } },
  { collection: CHAT_ITEMS, key: { dataId: 1 } },
  { collection: CHAT_ITEMS, key: { appId: 1, chatId: 1, dataId: 1 } },
  // A chat's last items (lastItems), newest first, then `_id`.
  { collection: CHAT_ITEMS, key: { appId: 1, chatId: 1, time: -1, _id: -1 } },
  { collection: CHAT_ITEMS, key: { teamId: 1, time: -1 } },
  { collection: CHAT_INPUT_GUIDES, key: { appId: 1, text: 1 }, options: { unique: true } },
  // An app's guides newest first (list and query; the text pattern is checked on the documents).
  { collection: CHAT_INPUT_GUIDES, key: { appId: 1, _id: -1 } },
];

/** Indexes of earlier versions the ones above replace (a prefix of one of them): none reads them. */
export const RETIRED_CHAT_INDEXES: IndexDeclaration[] = [
  { collection: CHATS, key: { teamId: 1, appId: 1, updateTime: -1 } },
  { collection: CHAT_ITEMS, key: { appId: 1, chatId: 1, time: -1 } },
];

export type ChatSource = 'test' | 'online' | 'share' | 'api' | 'team' | 'feishu' | 'official_account' | 'wecom';

interface StoredChat {
  _id: ObjectId;
  chatId: string;
  teamId: ObjectId;
  tmbId: ObjectId;
  appId: ObjectId;
  updateTime: Date;
  title: string;
  customTitle: string;
  top: boolean;
  source: ChatSource;
  shareId?: string;
  outLinkUid?: string;
  variableList?: unknown[];
  welcomeText?: string;
  variables: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

export interface StoredChatItem {
  _id: ObjectId;
  teamId: ObjectId;
  tmbId: ObjectId;
  chatId: string;
  appId: ObjectId;
  dataId: string;
  time: Date;
  obj: 'Human' | 'AI' | 'System';
  value: ChatValue[];
  userGoodFeedback?: string;
  userBadFeedback?: string;
  customFeedbacks?: (string | null)[];
  adminFeedback?: Record<string, unknown>;
  responseData?: Record<string, unknown>[];
}

/** A chat as the repository returns it: ids as hex strings, free-form fields decoded. */
export type ChatDoc = Plain<StoredChat>;
/** A chat item as the repository returns it: ids as hex strings, value and responses decoded. */
export type ChatItemDoc = Plain<StoredChatItem>;

/** Which chats a history list or clear selects (all given fields must match). */
export interface ChatQuery {
  appId?: string;
  teamId?: string;
  tmbId?: string;
  shareId?: string;
  outLinkUid?: string;
  source?: ChatSource;
  /** Chats updated at or after this time. */
  updatedSince?: Date;
}

function chatFilter(query: ChatQuery): Filter<StoredChat> {
  const { appId, teamId, tmbId, updatedSince, ...rest } = query;
  return {
    ...(appId !== undefined ? { appId: oid(appId) } : {}),
    ...(teamId !== undefined ? { teamId: oid(teamId) } : {}),
    ...(tmbId !== undefined ? { tmbId: oid(tmbId) } : {}),
    ...rest,
    ...(updatedSince !== undefined ? { updateTime: { $gte: updatedSince } } : {}),
  };
}

function decodeChat(doc: StoredChat): ChatDoc {
  return Object.assign(plain(doc), {
    variables: (decodeFromStorage(doc.variables) as Record<string, unknown>) ?? {},
    metadata: (decodeFromStorage(doc.metadata) as Record<string, unknown>) ?? {},
  }) as ChatDoc;
}

function decodeItem(doc: StoredChatItem): ChatItemDoc {
  return {
    ...plain(doc),
    value: normaliseValue(decodeFromStorage(doc.value)),
    responseData: doc.responseData ? (decodeFromStorage(doc.responseData) as Record<string, unknown>[]) : undefined,
  };
}

export interface NewChatItem {
  dataId: string;
  obj: 'Human' | 'AI' | 'System';
  value: ChatValue[];
  responseData?: Record<string, unknown>[];
  customFeedbacks?: string[];
}

export interface ChatUpsert {
  teamId: string;
  tmbId: string;
  appId: string;
  chatId: string;
  title: string;
  source: ChatSource;
  shareId?: string;
  outLinkUid?: string;
  variableList?: unknown[];
  welcomeText?: string;
  variables: Record<string, unknown>;
  metadata?: Record<string, unknown>;
}

export function createChatRepo(db: Db, chatFiles: ChatFilesRepo) {
  const chats = db.collection<StoredChat>(CHATS);
  const items = db.collection<StoredChatItem>(CHAT_ITEMS);
  // A turn's question and answer: concurrent turns (of any chats) share an insert (grouped-insert.ts).
  const itemInserts = createGroupedInserter(items);
  const guides = db.collection<{ _id: ObjectId; appId: ObjectId; text: string }>(CHAT_INPUT_GUIDES);

  return {
    /** `within` narrows the match to a share link's or a team's chats. */
    async findChat(appId: string, chatId: string, within: { shareId?: string; teamId?: string } = {}): Promise<ChatDoc | null> {
      const doc = await chats.findOne({ appId: oid(appId), chatId, ...chatFilter(within) });
      return doc ? decodeChat(doc) : null;
    },

    /** Chats as stored (variables and metadata not decoded), pinned first, newest first. */
    async listChats(query: ChatQuery, limit: number): Promise<ChatDoc[]> {
      const docs = await chats.find(chatFilter(query)).sort({ top: -1, updateTime: -1 }).limit(limit).toArray();
      return docs.map((doc) => plain(doc));
    },

    async chatIds(query: ChatQuery): Promise<string[]> {
      const docs = await chats.find(chatFilter(query), { projection: { chatId: 1 } }).toArray();
      return docs.map((doc) => doc.chatId);
    },

    async updateChat(appId: string, chatId: string, set: Partial<Pick<ChatDoc, 'title' | 'customTitle' | 'top'>>, now: Date): Promise<void> {
      await chats.updateOne({ appId: oid(appId), chatId }, { $set: { ...set, updateTime: now } });
    },

    /**
     * Files, then items, then the chat documents (a crash midway leaves no chat pointing at
     * missing items), then items again: those of a turn saved meanwhile (chat-run.service.ts
     * saveTurn says why that leaves none). Every step is bounded by the team: chat ids are chosen
     * by clients, so another team may use the same ones.
     */
    async deleteChats(teamId: string, appId: string, chatIds: string[]): Promise<void> {
      if (chatIds.length === 0) return;
      await chatFiles.deleteFiles(teamId, [appId], chatIds, false);
      // One statement per chat: FerretDB passes each equality down, where an `$in` read every chat and item of the app.
      const scopes = chatIds.map((chatId) => ({ teamId: oid(teamId), appId: oid(appId), chatId }));
      await deleteEach(items, scopes);
      await deleteEach(chats, scopes);
      await deleteEach(items, scopes);
    },

    /** Cascade of an app delete: every chat of the apps (files, items, chats) and their input guides. */
    async deleteByApps(teamId: string, appIds: string[]): Promise<void> {
      if (appIds.length === 0) return;
      // App by app: FerretDB passes each equality down, where an `$in` read every chat and item of the team.
      const scopes = appIds.map((appId) => ({ teamId: oid(teamId), appId: oid(appId) }));
      const chatIds = (await Promise.all(scopes.map((scope) => chats.find(scope, { projection: { chatId: 1 } }).toArray()))).flat().map((chat) => chat.chatId);
      await chatFiles.deleteFiles(teamId, appIds, chatIds, true);
      await deleteEach(items, scopes);
      await deleteEach(chats, scopes);
      // Input guides carry no team: the ids are the caller's team's apps.
      await deleteEach(guides, appIds.map((appId) => ({ appId: oid(appId) })));
    },

    /**
     * The last `limit` items of a chat in chronological order. By time (milliseconds, a turn's
     * items one apart), not by id as the reference: ids order by second, then by process, so two
     * turns saved by two replicas in one second could come back swapped.
     */
    async lastItems(appId: string, chatId: string, limit: number): Promise<ChatItemDoc[]> {
      const docs = await items.find({ appId: oid(appId), chatId }).sort({ time: -1, _id: -1 }).limit(limit).toArray();
      return docs.reverse().map(decodeItem);
    },

    async findItem(appId: string, chatId: string, dataId: string): Promise<ChatItemDoc | null> {
      const doc = await items.findOne({ appId: oid(appId), chatId, dataId });
      return doc ? decodeItem(doc) : null;
    },

    async deleteItem(teamId: string, appId: string, chatId: string, dataId: string): Promise<void> {
      await items.deleteOne({ teamId: oid(teamId), appId: oid(appId), chatId, dataId });
    },

    /** Answers the ids of the items written. */
    async insertItems(base: { teamId: string; tmbId: string; appId: string; chatId: string }, list: NewChatItem[], now: Date): Promise<string[]> {
      const ids = list.map(() => new ObjectId());
      await itemInserts.insertAll(
        list.map((item, index) => ({
          _id: ids[index] as ObjectId,
          teamId: oid(base.teamId),
          tmbId: oid(base.tmbId),
          appId: oid(base.appId),
          chatId: base.chatId,
          dataId: item.dataId,
          // Keeps question before answer when both share a timestamp.
          time: new Date(now.getTime() + index),
          obj: item.obj,
          value: encodeForStorage(item.value) as ChatValue[],
          ...(item.responseData ? { responseData: encodeForStorage(item.responseData) as Record<string, unknown>[] } : {}),
          ...(item.customFeedbacks?.length ? { customFeedbacks: item.customFeedbacks } : {}),
        })),
      );
      return ids.map((id) => id.toHexString());
    },

    /** Items by id (one statement each: FerretDB passes an `_id` equality down, not an `$in`). */
    async deleteItemsById(teamId: string, ids: string[]): Promise<void> {
      await deleteEach(items, ids.map((id) => ({ _id: oid(id), teamId: oid(teamId) })));
    },

    ...createChatItemUpdates(db, items),

    /**
     * Writes a turn's chat; `metadata` replaces the stored one (the caller merges). With
     * `existingId` (the chat the turn read) only that document is updated, and null answers that
     * it is gone; without, the caller's own chat of that id is created or updated, and null
     * answers that another caller's chat of that id was made meanwhile (the turn is not saved).
     * Answers the chat document's id.
     */
    async upsertChat(data: ChatUpsert, now: Date, existingId?: string): Promise<string | null> {
      const set = {
        title: data.title,
        variableList: encodeForStorage(data.variableList ?? []) as unknown[],
        welcomeText: data.welcomeText ?? '',
        variables: encodeForStorage(data.variables) as Record<string, unknown>,
        metadata: encodeForStorage(data.metadata ?? {}) as Record<string, unknown>,
        updateTime: now,
      };
      const filter = { appId: oid(data.appId), chatId: data.chatId };
      if (existingId) {
        const result = await chats.updateOne({ _id: oid(existingId), ...filter }, { $set: set });
        return result.matchedCount > 0 ? existingId : null;
      }
      // Only the caller's own chat of this id: one another caller made since this turn found none
      // (two first turns at once) is not matched, so the insert meets it on the unique index.
      // Whose chat it is, and through what, is fixed when it starts (the owner fields come from
      // these equalities on insert): a later turn, such as a team owner's in a member's chat,
      // comes with the chat it read (`existingId`) and never moves it to another owner or list.
      // A share visitor (the link creator's tmbId) and that member's API end user (customUid) may
      // share tmbId and uid: source and link tell them apart. An absent field matches as absent
      // (the driver drops an undefined condition, which would match any).
      const ownChat = { ...filter, tmbId: oid(data.tmbId), source: data.source, outLinkUid: data.outLinkUid ?? { $exists: false }, shareId: data.shareId || { $exists: false } };
      try {
        const doc = await chats.findOneAndUpdate(
          ownChat,
          {
            $set: set,
            $setOnInsert: { teamId: oid(data.teamId), customTitle: '', top: false },
          },
          // The whole document back: FerretDB takes no projection on findAndModify.
          { upsert: true, returnDocument: 'after' },
        );
        return doc ? doc._id.toHexString() : null;
      } catch (error) {
        // A chat of this id made in the meantime (MongoDB retries such an upsert itself; FerretDB
        // answers 11000): written into if it is the caller's own, else the turn is not saved.
        if (!isDuplicateKeyError(error)) throw error;
        const doc = await chats.findOneAndUpdate(ownChat, { $set: set }, { returnDocument: 'after' });
        return doc ? doc._id.toHexString() : null;
      }
    },

    /** Whether the chat document still stands (read by id). */
    async chatStands(id: string): Promise<boolean> {
      return (await chats.findOne({ _id: oid(id) }, { projection: { _id: 1 } })) !== null;
    },

    /** `existingId`: only that chat document (not one made since under the same chat id). */
    async setChatAfterContinue(appId: string, chatId: string, existingId: string | undefined, title: string, variables: Record<string, unknown>, now: Date): Promise<void> {
      const filter = { appId: oid(appId), chatId, ...(existingId ? { _id: oid(existingId) } : {}) };
      await chats.updateOne(filter, { $set: { title, variables: encodeForStorage(variables) as Record<string, unknown>, updateTime: now } });
    },

    // ---- input guides ----
    guides: {
      async count(appId: string): Promise<number> {
        return guides.countDocuments({ appId: oid(appId) });
      },
      async list(appId: string, searchRegex: RegExp | undefined, skip: number, limit: number) {
        const filter = { appId: oid(appId), ...(searchRegex ? { text: { $regex: searchRegex } } : {}) };
        const { docs: list, total } = await findPage(guides, filter, { _id: -1 }, { skip, limit });
        return { list: list.map((g) => ({ _id: g._id.toHexString(), appId: g.appId.toHexString(), text: g.text })), total };
      },
      async query(appId: string, searchRegex: RegExp, exclude: string, limit: number): Promise<string[]> {
        // The newest `limit` matches, then the typed text itself left out (as the reference: one fewer then).
        const docs = await guides.find({ appId: oid(appId), text: { $regex: searchRegex } }).sort({ _id: -1 }).limit(limit).toArray();
        return docs.map((d) => d.text).filter((text) => text && text !== exclude);
      },
      /** Unordered insert; duplicates are skipped and not counted. */
      insertMany: (appId: string, texts: string[]): Promise<number> =>
        insertManyNew(
          guides,
          [...new Set(texts)].map((text) => ({ _id: new ObjectId(), appId: oid(appId), text })),
        ),
      async update(appId: string, id: string, text: string): Promise<'ok' | 'missing' | 'duplicate'> {
        const other = await guides.findOne({ appId: oid(appId), text, _id: { $ne: oid(id) } }, { projection: { _id: 1 } });
        if (other) return 'duplicate';
        try {
          const result = await guides.updateOne({ _id: oid(id), appId: oid(appId) }, { $set: { text } });
          return result.matchedCount > 0 ? 'ok' : 'missing';
        } catch (error) {
          if (isDuplicateKeyError(error)) return 'duplicate';
          throw error;
        }
      },
      async deleteMany(appId: string, ids: string[]): Promise<void> {
        await guides.deleteMany({ appId: oid(appId), _id: { $in: oids(ids) } });
      },
      async deleteAll(appId: string): Promise<void> {
        await guides.deleteMany({ appId: oid(appId) });
      },
    },
  };
}

export type ChatRepo = ReturnType<typeof createChatRepo>;
