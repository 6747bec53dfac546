/**
 * Start-up repair for the unique chat index `{chatId, appId}` (CHAT_INDEXES): run only when that
 * index cannot be built. Chats without a chat id get one of their own; of chats with a complete
 * key, only second documents are deleted. What still collides (a chat id that is not a string, an
 * app id that is not an ObjectId) stops start-up with an error naming those chats
 * (docs/decisions.md, #indexes).
 */
import { type Db, ObjectId } from 'mongodb';
import { bulkUpdate, deleteEach, isUniqueIndexBuildFailure } from '../../infra/mongo.js';
import { CHATS } from './chat.repo.js';

/** A chat as this service writes it: a string chat id and an ObjectId app id. */
const KEYED = { appId: { $type: 'objectId' }, chatId: { $type: 'string' } } as const;

interface ChatKey {
  appId: ObjectId;
  chatId: string;
}

/**
 * The group key, if both fields are there with the stored types; else null, and no read or delete
 * is built from it. The client drops undefined values from filters (ignoreUndefined): a filter
 * built from a key without `chatId` would match every chat of the app, and without either field
 * every chat of the deployment.
 */
export function completeChatKey(key: unknown): ChatKey | null {
  if (typeof key !== 'object' || key === null) return null;
  const { appId, chatId } = key as { appId?: unknown; chatId?: unknown };
  return appId instanceof ObjectId && typeof chatId === 'string' ? { appId, chatId } : null;
}

/**
 * Leaves one chat document per chat id of an app (the oldest; items belong to the chat id, so
 * none is lost): two first turns at once could make two before the unique index existed. Only
 * documents with a complete key are grouped; each delete names its document's `_id` and both key
 * fields, so it can match that document or nothing. Answers how many went. A full scan.
 */
export async function removeDuplicateChats(db: Db): Promise<number> {
  const chats = db.collection<{ _id: ObjectId; appId: ObjectId; chatId: string }>(CHATS);
  // $group with $sum only: FerretDB 1.24 has no $first, $min or $push.
  const groups = await chats
    .aggregate<{ _id: unknown }>([{ $match: KEYED }, { $group: { _id: { appId: '$appId', chatId: '$chatId' }, count: { $sum: 1 } } }, { $match: { count: { $gt: 1 } } }])
    .toArray();
  let removed = 0;
  for (const group of groups) {
    const key = completeChatKey(group._id);
    if (!key) continue;
    const [, ...extra] = await chats.find({ appId: { $eq: key.appId }, chatId: { $eq: key.chatId } }, { projection: { _id: 1 } }).sort({ _id: 1 }).toArray();
    // One statement per document (FerretDB reads the whole collection for an `_id` `$in`).
    removed += await deleteEach(
      chats,
      extra.map((doc) => ({ _id: doc._id, appId: { $eq: key.appId }, chatId: { $eq: key.chatId } })),
    );
  }
  return removed;
}

/**
 * The chat id a chat without one is given: its own `_id` as text (an ObjectId's hex), unique as
 * the `_id` is, so no two such chats collide in the unique index and each stays readable as a
 * chat under that id. Null for an `_id` of another type (the chat is left as it is).
 */
export function ownChatId(id: unknown): string | null {
  if (id instanceof ObjectId) return id.toHexString();
  return typeof id === 'string' && id !== '' ? id : null;
}

/**
 * Gives every chat without a chat id (missing or null: not written by this service, e.g. imported)
 * one of its own (`ownChatId`). MongoDB indexes a missing field as null, so two such chats of one
 * app (or two without app id either) collide in the unique index and stop start-up; FerretDB 1.24
 * collides explicit nulls only, and refuses the partial index that would leave them out. Each
 * update names the `_id` and still requires no chat id, so a chat id written meanwhile stays.
 * Answers how many chats were given one. A full scan.
 */
export async function giveChatIdsToChatsWithout(db: Db): Promise<number> {
  const chats = db.collection<{ _id: unknown; chatId?: unknown }>(CHATS);
  // `chatId: null` matches a missing field and an explicit null, on MongoDB and FerretDB alike.
  const unnamed = await chats.find({ chatId: null }, { projection: { _id: 1 } }).toArray();
  const updates = unnamed.flatMap((doc) => {
    const chatId = ownChatId(doc._id);
    return chatId === null ? [] : [{ updateOne: { filter: { _id: doc._id, chatId: null }, update: { $set: { chatId } } } }];
  });
  if (updates.length === 0) return 0;
  return (await bulkUpdate(chats, updates, { ordered: false })).modifiedCount;
}

/** How many chats lack a string `chatId` or an ObjectId `appId` (never deduplicated). */
function countUnkeyedChats(db: Db): Promise<number> {
  return db.collection(CHATS).countDocuments({ $nor: [KEYED] });
}

/**
 * The error start-up stops with when the unique index still cannot be built after the clean-up:
 * when chats without a complete key exist (two of one app with the same chat id of another type,
 * say), one naming them and how to find them; else `error` itself.
 */
export async function unbuildableChatIndexError(db: Db, error: unknown): Promise<unknown> {
  if (!isUniqueIndexBuildFailure(error)) return error;
  const unkeyed = await countUnkeyedChats(db).catch(() => 0);
  if (unkeyed === 0) return error;
  return new Error(
    `${(error as Error).message}; ${unkeyed} chat document(s) have a chatId that is not a string or an appId that is not an ObjectId (not written by this service; ` +
      'start-up deletes none of them, and two of them may collide in the unique chat index {chatId, appId}): ' +
      `find them with db.chats.find({$nor: [${JSON.stringify(KEYED)}]}), fix or delete them, then start again`,
    { cause: error },
  );
}
