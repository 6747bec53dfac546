/**
 * Chat files behind read links whose token expired (or soon will). A chat file's link
 * (`/api/common/file/read?token=…`) is signed for 7 days (file-token.ts), and a stored chat names
 * its inline images by such links: without this, the model call of a turn continuing the chat
 * after a week would silently go without the history's images, and the chat window would show
 * them broken.
 *
 * A run reads such a file straight from the store, never over HTTP (where an expired link stays
 * refused, for anyone); a chat window opened on the chat gets a new link in its place. Both only
 * for a file of that same chat: the token's signature holds as of its issue and names a chat file
 * of the chat's team, and the file's owner fields name that team, that chat and (when they name
 * an app) that app. Another chat's link, a share-link visitor's included, is never read or renewed
 * however it was obtained.
 */
import { Errors } from '../../../infra/errors.js';
import { decodeJwtUnchecked } from '../../../infra/jwt.js';
import { ownServicePath, OWN_FILE_READ_PATH } from '../../../domain/workflow/own-service-url.js';
import { chatFileOwner, type FileRepo, NO_APP } from './file.repo.js';
import { type FileTokenPayload, signFileToken, verifyFileToken } from './file-token.js';

/** The chat a run (or a chat window) belongs to. */
export interface RunChat {
  teamId: string;
  appId: string;
  chatId: string;
}

/** A file naming no app is the chat's (stored before the app was recorded); one naming an app must name this one. */
const sameApp = (appId: unknown, chat: RunChat) => appId === NO_APP || String(appId) === chat.appId;

/** Links renewed when they expire within this: a window's links are fetched when shown, possibly some time after it opens. */
export const RENEW_WITHIN_MS = 24 * 3600 * 1000;

/** What a chat link's token is refused for: it is no chat link of the chat's team. */
const refused = () => Errors.unAuthFile('The file link is not one of this chat');

/**
 * The claims of `token` when its expiry (ms) is `due` (undefined otherwise), checked as of its
 * issue (its signature and claims hold, only the time has passed) and as a chat link of `chat`'s
 * team; throws unAuthFile when it is not one.
 */
function dueChatLinkClaims(fileTokenKey: string, token: string, chat: RunChat, due: (expiresAtMs: number) => boolean): FileTokenPayload | undefined {
  const { exp, iat } = decodeJwtUnchecked(token)?.payload ?? {};
  if (typeof exp !== 'number' || typeof iat !== 'number' || !due(exp * 1000)) return undefined;
  const claims = verifyFileToken(fileTokenKey, token, iat * 1000);
  if (claims.bucketName !== 'chat' || claims.teamId !== chat.teamId || !chat.chatId) throw refused();
  return claims;
}

export function createExpiredChatLinkReader(deps: { fileTokenKey: string; files: Pick<FileRepo, 'find' | 'readBuffer'>; now?: () => number }) {
  const now = deps.now ?? Date.now;
  /**
   * The bytes of the file `token` names when it has expired and the file is of `run`'s chat;
   * undefined when the token has not expired (read it over the file route, as any link). Throws
   * when it may not be read for this run, or the file is larger than `maxBytes`.
   */
  return async function readExpired(token: string, run: RunChat, maxBytes: number): Promise<{ buffer: Buffer; contentType?: string } | undefined> {
    const claims = dueChatLinkClaims(deps.fileTokenKey, token, run, (expiresAt) => expiresAt < now());
    if (!claims) return undefined;
    const file = await deps.files.find('chat', claims.fileId);
    if (!file) throw Errors.fileNotFound(`File ${claims.fileId} not found`);
    const owner = chatFileOwner(file.metadata);
    if (!owner || owner.teamId.toHexString() !== run.teamId || owner.chatId !== run.chatId || !sameApp(owner.appId, run)) throw refused();
    if (file.length > maxBytes) throw Errors.payloadTooLarge(`The file is larger than ${maxBytes} bytes`);
    return { buffer: await deps.files.readBuffer('chat', claims.fileId), contentType: file.contentType };
  };
}

/**
 * For a chat window: new read links, of the same files, for the links among `urls` that are this
 * service's (relative) read links of `chat`'s own files and expire within RENEW_WITHIN_MS;
 * answered as old URL -> new URL (links not renewed are absent). One read, and only when a link
 * is due.
 */
export function createChatLinkRenewer(deps: { fileTokenKey: string; files: Pick<FileRepo, 'chatFilesOf'>; now?: () => number }) {
  const now = deps.now ?? Date.now;
  return async function renewLinks(urls: readonly string[], chat: RunChat): Promise<Map<string, string>> {
    const due = new Map<string, { url: URL; claims: FileTokenPayload }>();
    for (const url of new Set(urls)) {
      const path = ownServicePath(url, OWN_FILE_READ_PATH);
      const parsed = path ? new URL(path, 'http://self.invalid') : null;
      const token = parsed?.searchParams.get('token');
      if (!parsed || !token) continue;
      let claims: FileTokenPayload | undefined;
      try {
        claims = dueChatLinkClaims(deps.fileTokenKey, token, chat, (expiresAt) => expiresAt - now() <= RENEW_WITHIN_MS);
      } catch {
        continue; // Not a chat link of this team this service signed: shown as it is.
      }
      if (claims) due.set(url, { url: parsed, claims });
    }
    const renewed = new Map<string, string>();
    if (due.size === 0) return renewed;
    const owned = await deps.files.chatFilesOf(chat, [...new Set([...due.values()].map((link) => link.claims.fileId))]);
    const ours = new Set(owned.filter((file) => sameApp(file.appId, chat)).map((file) => file._id));
    for (const [old, { url, claims }] of due) {
      if (!ours.has(claims.fileId)) continue;
      url.searchParams.set('token', signFileToken(deps.fileTokenKey, claims, now()));
      renewed.set(old, `${url.pathname}${url.search}`);
    }
    return renewed;
  };
}
