/**
 * Images sent inline in chat messages (`image_url` parts holding `data:` URLs, as OpenAI SDK users
 * send phone photos). Every request's are checked (a 400 naming the field); in a stored chat (a
 * chatId given) the question's are stored as chat files and the stored item names the file's
 * read link instead: a chat item is one MongoDB document (16 MB at most) that every later turn and
 * history page reads back. The AI chat node reads such links back as data URLs for the model
 * (workflow-nodes/llm-nodes.ts), in this turn and when the item is history in later ones.
 */
import type { ChatItem, ChatValue } from '../../domain/workflow/types.js';
import { Errors } from '../../infra/errors.js';
import type { AuthContext } from '../auth/types.js';
import { rasterImageType } from '../datasets/files/served-type.js';
import type { ChatFileStore } from '../datasets/index.js';
import type { AdmittedCompletion } from './completion-admission.js';

/** Inline images one request may carry, in all its messages (the most one model call is sent: llm-nodes.ts MAX_VISION_IMAGES). */
export const MAX_INLINE_IMAGES_PER_REQUEST = 20;

const DATA_URL = /^data:/i;
/** Standard base64 (RFC 4648 §4), padded, nothing else (no line breaks, no URL-safe alphabet). */
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** Base64 characters decoded to judge the bytes: 12 bytes, enough for every raster signature (WebP's is the longest). */
const SIGNATURE_CHARS = 16;
const EXTENSIONS: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/gif': 'gif', 'image/webp': 'webp' };

export const isDataUrl = (url: string): boolean => DATA_URL.test(url);

/** An image part of a question holding its image inline (a `data:` URL). */
const isInlineImage = (value: ChatValue): value is Extract<ChatValue, { type: 'file' }> => value.type === 'file' && value.file.type === 'image' && isDataUrl(value.file.url);

/** The media type and base64 text of a `data:` URL, or why it is no base64 image. */
function splitDataUrl(url: string): { mime: string; base64: string } | { problem: string } {
  const comma = url.indexOf(',');
  const params = (comma < 0 ? url.slice(5) : url.slice(5, comma)).split(';').map((part) => part.trim().toLowerCase());
  if (comma < 0 || params.at(-1) !== 'base64' || params.length < 2) return { problem: 'a data URL must be base64 (data:image/jpeg;base64,...)' };
  const mime = params[0]!;
  if (!mime.startsWith('image/')) return { problem: `a data URL must hold an image (PNG, JPEG, GIF or WebP), not '${mime || 'text/plain'}'` };
  return { mime, base64: url.slice(comma + 1) };
}

/** Why an image URL of a message is refused (undefined: accepted). Only `data:` URLs are judged here. */
export function inlineImageProblem(url: string): string | undefined {
  if (!isDataUrl(url)) return undefined;
  const split = splitDataUrl(url);
  if ('problem' in split) return split.problem;
  if (split.base64.length % 4 !== 0 || !BASE64.test(split.base64)) return 'the data URL is not valid base64';
  if (!rasterImageType(Buffer.from(split.base64.slice(0, SIGNATURE_CHARS), 'base64'))) return 'the data URL does not hold a PNG, JPEG, GIF or WebP image (judged by its bytes)';
  return undefined;
}

/** The URL of an `image_url` part: OpenAI's `{url}`, or the bare string some clients send. */
export function imagePartUrl(part: Record<string, unknown>): unknown {
  const image = part.image_url;
  return typeof image === 'object' && image !== null && !Array.isArray(image) ? (image as { url?: unknown }).url : image;
}

/**
 * Bytes of the item as a chat stores it, its inline images aside (they are stored as files):
 * what a request could hold before larger bodies were let in, at most BODY_LIMIT_BYTES.
 */
export function storedBytesBesideInlineImages(item: ChatItem): number {
  const kept = item.value.filter((value) => !isInlineImage(value));
  return Buffer.byteLength(JSON.stringify(kept));
}

/** Stores a chat's files (the upload route's rules: team, owner fields, visitor quota) and takes them back. */
export type InlineImageFiles = Pick<ChatFileStore, 'store' | 'discard'>;

/**
 * The item with each of its inline images stored as a file of the chat (once per distinct URL)
 * and named by the file's read link; the ids of the files stored. URLs were checked by the
 * request schema (inlineImageProblem). A failure takes back the files stored before it.
 */
export async function storeInlineImages(
  files: InlineImageFiles,
  auth: AuthContext,
  owner: { appId: string; chatId: string },
  item: ChatItem,
): Promise<{ item: ChatItem; fileIds: string[] }> {
  if (!item.value.some(isInlineImage)) return { item, fileIds: [] };
  const stored = new Map<string, { url: string; name: string }>();
  const fileIds: string[] = [];
  const value: ChatValue[] = [];
  try {
    for (const entry of item.value) {
      if (!isInlineImage(entry)) {
        value.push(entry);
        continue;
      }
      let link = stored.get(entry.file.url);
      if (!link) {
        const buffer = Buffer.from(entry.file.url.slice(entry.file.url.indexOf(',') + 1), 'base64');
        const mimetype = rasterImageType(buffer) ?? '';
        const filename = `image-${stored.size + 1}.${EXTENSIONS[mimetype] ?? 'bin'}`;
        const saved = await files.store(auth, { buffer, filename, mimetype }, owner);
        fileIds.push(saved.fileId);
        link = { url: saved.previewUrl, name: filename };
        stored.set(entry.file.url, link);
      }
      value.push({ type: 'file', file: { ...entry.file, type: 'image', name: entry.file.name || link.name, url: link.url } });
    }
  } catch (error) {
    await files.discard(auth.teamId, fileIds).catch(() => undefined);
    throw error;
  }
  return { item: { ...item, value }, fileIds };
}

/**
 * The question's inline images, stored as files of the chat when the turn is saved in one; the
 * turn's items as they are otherwise. A plugin's question is its inputs. The rest of a stored
 * question stays within `maxBytes` (BODY_LIMIT_BYTES, as before larger bodies were let in): a
 * chat item is one document, read back by every later turn.
 */
export async function questionWithStoredImages(
  files: InlineImageFiles,
  admitted: Pick<AdmittedCompletion, 'items' | 'isPlugin' | 'caller' | 'app'>,
  chatId: string | undefined,
  maxBytes: number,
): Promise<{ items: ChatItem[]; fileIds: string[] }> {
  const last = admitted.items.at(-1);
  if (!chatId || admitted.isPlugin || !last) return { items: admitted.items, fileIds: [] };
  const bytes = storedBytesBesideInlineImages(last);
  if (bytes > maxBytes) {
    throw Errors.payloadTooLarge(
      `The question is too large to keep in a chat: ${bytes} bytes besides its inline images, at most ${maxBytes}; send files as uploads or links, or ask without a chatId`,
    );
  }
  const stored = await storeInlineImages(files, admitted.caller.auth, { appId: admitted.app._id, chatId }, last);
  return { items: [...admitted.items.slice(0, -1), stored.item], fileIds: stored.fileIds };
}

/**
 * Runs the turn; the files of its question's images that no stored item names (the turn failed,
 * or its question was not stored: a continuation, a failed save) are taken back, never those of a
 * stored question, whatever fails after its save.
 */
export async function runKeepingStoredImages<T extends { questionStored: boolean }>(files: InlineImageFiles, teamId: string, fileIds: string[], run: () => Promise<T>): Promise<T> {
  const discard = () => (fileIds.length > 0 ? files.discard(teamId, fileIds).catch(() => undefined) : undefined);
  const result = await run().catch(async (error: unknown) => {
    await discard();
    throw error;
  });
  if (!result.questionStored) await discard();
  return result;
}
