/**
 * Start-up repair for the unique chat index `{chatId, appId}` (CHAT_INDEXES): run only when that
 * index cannot be built. Deletes only second documents of a complete key; documents without one
 * are never touched and keep the index from being built, which stops start-up (docs/decisions.md,
 * #indexes).
 */
import { type Db, ObjectId } from 'mongodb';
import { deleteEach, isUniqueIndexBuildFailure } from '../../infra/mongo.js';
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

/** How many chats lack a string `chatId` or an ObjectId `appId` (never deduplicated). */
function countUnkeyedChats(db: Db): Promise<number> {
  return db.collection(CHATS).countDocuments({ $nor: [KEYED] });
}

/**
 * The error start-up stops with when the unique index still cannot be built after the clean-up:
 * when chats without a complete key exist (on MongoDB two of one app without `chatId` collide, a
 * missing field being indexed as null), one naming them and how to find them; else `error` itself.
 */
export async function unbuildableChatIndexError(db: Db, error: unknown): Promise<unknown> {
  if (!isUniqueIndexBuildFailure(error)) return error;
  const unkeyed = await countUnkeyedChats(db).catch(() => 0);
  if (unkeyed === 0) return error;
  return new Error(
    `${(error as Error).message}; ${unkeyed} chat document(s) have no string chatId or no ObjectId appId (not written by this service; ` +
      'MongoDB indexes a missing field as null, so two of one app collide in the unique chat index {chatId, appId}) and start-up deletes none of them: ' +
      `find them with db.chats.find({$nor: [${JSON.stringify(KEYED)}]}), fix or delete them, then start again`,
    { cause: error },
  );
}
