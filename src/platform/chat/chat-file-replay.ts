/**
 * A run's own reads of chat files behind read links whose token expired. A chat file's link
 * (`/api/common/file/read?token=…`) is signed for 7 days (file-token.ts), and a stored chat names
 * its inline images by such links (inline-images.ts): without this, the model call of a turn
 * continuing the chat after a week would silently go without the history's images.
 *
 * The run reads such a file straight from the store, never over HTTP (where an expired link stays
 * refused, for anyone), and only when the token's signature holds, it names a chat file of the
 * run's team, and the file is of that team and, when the file records an app, of the run's app.
 */
import { OWN_FILE_READ_PATH, ownServicePath } from '../../domain/workflow/own-service-url.js';
import { Errors } from '../../infra/errors.js';
import { decodeJwtUnchecked } from '../../infra/jwt.js';
import { verifyFileToken } from '../datasets/files/file-token.js';
import type { ChatFileStore } from '../datasets/index.js';

type FileBytes = { buffer: Buffer; contentType?: string };

export function createChatFileReplay(deps: { fileTokenKey: string; files: Pick<ChatFileStore, 'find' | 'read'>; now?: () => number }) {
  const now = deps.now ?? Date.now;
  /**
   * The bytes of the file `url` links to when the link is this service's file link whose token
   * has expired; undefined for any other URL (an unexpired link is read as any other, over the
   * file route). Throws when the expired link may not be read for this run, or the file is
   * larger than `maxBytes`.
   */
  return async function readExpiredLink(url: string, run: { teamId: string; appId: string }, maxBytes: number): Promise<FileBytes | undefined> {
    const path = ownServicePath(url, OWN_FILE_READ_PATH);
    const token = path ? new URL(path, 'http://self.invalid').searchParams.get('token') : null;
    if (!token) return undefined;
    const { exp, iat } = decodeJwtUnchecked(token)?.payload ?? {};
    if (typeof exp !== 'number' || typeof iat !== 'number' || exp * 1000 >= now()) return undefined;
    // Checked as of its issue: the signature (and claims) hold, only the time has passed.
    const claims = verifyFileToken(deps.fileTokenKey, token, iat * 1000);
    if (claims.bucketName !== 'chat' || claims.teamId !== run.teamId) throw Errors.unAuthFile('The file link is not one of this chat');
    const file = await deps.files.find(claims.fileId);
    if (!file) throw Errors.fileNotFound(`File ${claims.fileId} not found`);
    const fileApp = file.metadata.appId;
    if (String(file.metadata.teamId) !== run.teamId || (fileApp !== undefined && fileApp !== null && fileApp !== '' && String(fileApp) !== run.appId)) {
      throw Errors.unAuthFile('The file link is not one of this chat');
    }
    if (file.length > maxBytes) throw Errors.payloadTooLarge(`The file is larger than ${maxBytes} bytes`);
    return { buffer: await deps.files.read(claims.fileId), contentType: file.contentType };
  };
}

export type ChatFileReplay = ReturnType<typeof createChatFileReplay>;
