/**
 * A run's own reads of chat files behind read links whose token expired. A chat file's link
 * (`/api/common/file/read?token=…`) is signed for 7 days (file-token.ts), and a stored chat names
 * its inline images by such links: without this, the model call of a turn continuing the chat
 * after a week would silently go without the history's images.
 *
 * The run reads such a file straight from the store, never over HTTP (where an expired link stays
 * refused, for anyone), and only a file of the run's own chat: the token's signature holds as of
 * its issue and names a chat file of the run's team, and the file's owner fields name that team,
 * that chat and (when they name an app) that app. Another chat's link, a share-link visitor's
 * included, is refused however it was obtained.
 */
import { Errors } from '../../../infra/errors.js';
import { decodeJwtUnchecked } from '../../../infra/jwt.js';
import { chatFileOwner, type FileRepo, NO_APP } from './file.repo.js';
import { verifyFileToken } from './file-token.js';

/** The chat a run belongs to. */
export interface RunChat {
  teamId: string;
  appId: string;
  chatId: string;
}

export function createExpiredChatLinkReader(deps: { fileTokenKey: string; files: Pick<FileRepo, 'find' | 'readBuffer'>; now?: () => number }) {
  const now = deps.now ?? Date.now;
  const refused = () => Errors.unAuthFile('The file link is not one of this chat');
  /**
   * The bytes of the file `token` names when it has expired and the file is of `run`'s chat;
   * undefined when the token has not expired (read it over the file route, as any link). Throws
   * when it may not be read for this run, or the file is larger than `maxBytes`.
   */
  return async function readExpired(token: string, run: RunChat, maxBytes: number): Promise<{ buffer: Buffer; contentType?: string } | undefined> {
    const { exp, iat } = decodeJwtUnchecked(token)?.payload ?? {};
    if (typeof exp !== 'number' || typeof iat !== 'number' || exp * 1000 >= now()) return undefined;
    // Checked as of its issue: the signature (and claims) hold, only the time has passed.
    const claims = verifyFileToken(deps.fileTokenKey, token, iat * 1000);
    if (claims.bucketName !== 'chat' || claims.teamId !== run.teamId || !run.chatId) throw refused();
    const file = await deps.files.find('chat', claims.fileId);
    if (!file) throw Errors.fileNotFound(`File ${claims.fileId} not found`);
    const owner = chatFileOwner(file.metadata);
    const sameApp = owner?.appId === NO_APP || String(owner?.appId) === run.appId;
    if (!owner || owner.teamId.toHexString() !== run.teamId || owner.chatId !== run.chatId || !sameApp) throw refused();
    if (file.length > maxBytes) throw Errors.payloadTooLarge(`The file is larger than ${maxBytes} bytes`);
    return { buffer: await deps.files.readBuffer('chat', claims.fileId), contentType: file.contentType };
  };
}
