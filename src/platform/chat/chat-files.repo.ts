/**
 * The chat module's side of the `chat` GridFS bucket (uploads go through the datasets module's
 * file repository): finding and deleting a chat's files, and the start-up migration that gives
 * files stored before the owner fields existed those fields.
 */
import { type AnyBulkWriteOperation, type Db, ObjectId } from 'mongodb';
import { bulkUpdate, deleteEach, EQUALITY_READS_UP_TO, findWithAnyOf, type IndexDeclaration, runMigrationOnce } from '../../infra/mongo.js';
import { oid } from '../../infra/plain-record.js';
import { type ChatFileOwner, chatFileOwner, NO_APP } from '../datasets/files/file.repo.js';

/** GridFS bucket of files uploaded into chats (metadata: teamId, chatId, appId?; owner fields at top level). */
export const CHAT_FILE_BUCKET = 'chat';
const FILES = `${CHAT_FILE_BUCKET}.files`;
const CHUNKS = `${CHAT_FILE_BUCKET}.chunks`;
const OWNER_MIGRATION = 'chat-file-owner-fields';

/** Files given their owner fields per read and bulk write of the migration. */
const OWNER_BATCH = 2000;

export const CHAT_FILE_INDEXES: IndexDeclaration[] = [
  { collection: FILES, key: { teamId: 1, chatId: 1 } },
  { collection: FILES, key: { teamId: 1, appId: 1 } },
  // The index GridFS itself creates on a bucket's first upload; declared for files stored otherwise.
  { collection: CHUNKS, key: { files_id: 1, n: 1 }, options: { unique: true } },
];

type StoredChatFile = ChatFileOwner & { _id: ObjectId; metadata?: Record<string, unknown> };

export function createChatFilesRepo(db: Db) {
  const files = db.collection<StoredChatFile>(FILES);
  const chunks = db.collection<{ files_id: ObjectId }>(CHUNKS);
  /**
   * Until this process has seen the migration finished, files may lack the owner fields, so
   * deletes also look for such files by their metadata (a read of every chat file on FerretDB).
   */
  let ownersMayBeMissing = true;

  /** The team's files without owner fields, with the owner their metadata names. */
  async function filesWithoutOwner(teamId: string): Promise<(ChatFileOwner & { _id: ObjectId })[]> {
    const found = await files.find({ teamId: { $exists: false }, 'metadata.teamId': { $in: [teamId, oid(teamId)] } }, { projection: { _id: 1, metadata: 1 } }).toArray();
    return found.flatMap((file) => {
      const owner = chatFileOwner(file.metadata);
      return owner ? [{ _id: file._id, ...owner }] : [];
    });
  }

  return {
    /**
     * Deletes the team's files of these chats (a file naming an app must name one of `appIds`)
     * and, with `wholeApps`, every file naming one of the apps. Chat ids are chosen by clients and
     * repeat across teams, so every read is bounded by team. Files are found by their top-level
     * owner fields (file.repo.ts) with `findWithAnyOf`: by chat for a few chats, else by app plus
     * the team's files naming no app.
     */
    async deleteFiles(teamId: string, appIds: string[], chatIds: string[], wholeApps: boolean): Promise<void> {
      const team = oid(teamId);
      const apps = new Set(appIds);
      const chats = new Set(chatIds);
      const owners = { _id: 1, chatId: 1, appId: 1 };
      // Chat by chat while `findWithAnyOf` reads value by value; beyond, by app (and no app).
      const byChat = !wholeApps && chats.size <= EQUALITY_READS_UP_TO;
      const reads: Promise<(ChatFileOwner & { _id: ObjectId })[]>[] = [
        byChat
          ? findWithAnyOf(files, { teamId: team }, 'chatId', [...chats], owners)
          : findWithAnyOf(files, { teamId: team }, 'appId', [...appIds.map(oid), NO_APP], owners),
      ];
      if (ownersMayBeMissing) reads.push(filesWithoutOwner(teamId));
      const namesApp = (file: ChatFileOwner) => file.appId instanceof ObjectId && apps.has(file.appId.toHexString());
      const ids = (await Promise.all(reads))
        .flat()
        .filter((file) => (wholeApps && namesApp(file)) || (chats.has(file.chatId) && (file.appId === NO_APP || namesApp(file))))
        .map((file) => file._id);
      // The chunks first: a stop midway leaves file documents, which a retry of the delete finds
      // again. The other order (GridFS's) left chunks that no file names and nothing could find.
      await deleteEach(chunks, ids.map((files_id) => ({ files_id })));
      await deleteEach(files, ids.map((_id) => ({ _id })));
    },

    /**
     * Once per deployment (run in the background from start-up): files stored without the owner
     * fields, by an earlier version or by the reference system, get them from their metadata.
     * Answers whether the migration is finished (false when `stopped` ended it early).
     */
    async addMissingOwners(stopped: () => boolean = () => false): Promise<boolean> {
      const finished = await runMigrationOnce(db, OWNER_MIGRATION, async () => {
        // A batch at a time, read whole before its writes (no cursor stays open across them).
        // Every file read gets a `teamId` (null when its metadata names no valid team), so the
        // next read skips it.
        for (;;) {
          if (stopped()) return false;
          const batch = await files.find({ teamId: { $exists: false } }, { projection: { _id: 1, metadata: 1 } }).limit(OWNER_BATCH).toArray();
          if (batch.length === 0) return true;
          const updates = batch.map((file): AnyBulkWriteOperation<StoredChatFile> => ({
            updateOne: { filter: { _id: file._id }, update: { $set: chatFileOwner(file.metadata) ?? { teamId: null as unknown as ObjectId } } },
          }));
          await bulkUpdate(files, updates, { ordered: false });
        }
      });
      if (finished) ownersMayBeMissing = false;
      return finished;
    },
  };
}

export type ChatFilesRepo = ReturnType<typeof createChatFilesRepo>;
