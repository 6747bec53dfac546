import { textHead } from '../../../domain/text-cut.js';
import { describeError } from '../../../infra/database-errors.js';
import { Errors } from '../../../infra/errors.js';
import { isObjectIdHex } from '../../../infra/mongo.js';
import { sniffContentType } from '../../../infra/text-extract.js';
import type { AuthContext } from '../../auth/types.js';
import { qaOfStoredFile, readLink, readLinkInTurn, readUsableFile } from '../collections/collection-sources.js';
import { qaOfText } from './csv-read.js';
import type { DatasetsContext } from '../context.js';
import type { BucketName } from './file.repo.js';
import { rasterImageType, servedAs, textEncodingOf } from './served-type.js';
import { fileReadUrl, signFileToken, verifyFileToken } from './file-token.js';
import type { UploadedFile } from './multipart.js';
import { headOfStoredFile, previewChunksOfStoredFile, previewChunksOfText } from './large-text.js';
import { PREVIEW_CHUNK_COUNT } from './preview-chunks.js';
import { previewFromFileStart } from './preview-file.js';
import { createVisitorUploadQuota, visitorUploaderOf } from './visitor-upload-quota.js';

export const MAX_BASE64_CHARS = 12 * 1024 * 1024;
/** An image is stored in one document (MongoDB's limit: 16 MB); the base64 cap above decodes to 9 MB. */
export const MAX_IMAGE_BYTES = (MAX_BASE64_CHARS / 4) * 3;

export type SourceType = 'fileLocal' | 'link' | 'externalFile';
/** Characters previewContent shows. */
const PREVIEW_CONTENT_CHARS = 3000;

/** Called after a visitor's chat file is stored under the app of their credential; throws to refuse it (removed by then). */
type AppFileStored = (teamId: string, appId: string) => Promise<void>;

export function createFileService(ctx: DatasetsContext, appFileStored: AppFileStored = async () => undefined) {
  const { files } = ctx.repos;
  const visitorQuota = createVisitorUploadQuota({ files, maxBytes: ctx.config.SHARE_UPLOAD_MAX_BYTES_PER_DAY });

  /**
   * Stores an upload in GridFS; team, member, type, encoding and uploader mark in the metadata
   * always come from us. A share-page or team-space chat user stores chat files only, under the
   * app it chats with, within the team's visitor upload quota.
   */
  async function store(auth: AuthContext, bucketName: BucketName, file: UploadedFile, given: Record<string, unknown>) {
    const chatUser = visitorUploaderOf(auth) !== undefined;
    if (chatUser && bucketName !== 'chat') throw Errors.forbidden('Share-page and team-space users upload to the chat bucket only');
    const metadata = chatUser && auth.appId ? { ...given, appId: auth.appId } : given;
    if (file.buffer.length === 0) throw Errors.missingParams(`The file '${file.filename}' is empty`);
    const uploadedBy = await visitorQuota.admit(auth, file.buffer.length);
    const contentType = sniffContentType(file.buffer, file.filename);
    const fileId = await files.upload(bucketName, {
      buffer: file.buffer,
      filename: file.filename,
      contentType,
      // A member's upload has no mark, whatever its metadata says (undefined values are not stored).
      metadata: { ...metadata, encoding: contentType === 'text/plain' ? textEncodingOf(file.buffer) : undefined, teamId: auth.teamId, tmbId: auth.tmbId, uploadedBy },
    });
    if (chatUser && auth.appId) {
      // A failed check (the app gone, or the database) answers an error: the file goes too, or it
      // would count against the visitor quota with its id never shown, once more on each retry.
      await appFileStored(auth.teamId, auth.appId).catch(async (error: unknown) => {
        await files
          .deleteMany(bucketName, auth.teamId, [fileId])
          .catch((undo: unknown) => ctx.log.warn(`chat file ${fileId} refused after it was stored and kept: ${describeError(undo)}`));
        throw error;
      });
    }
    const token = signFileToken(ctx.config.FILE_TOKEN_KEY, { bucketName, teamId: auth.teamId, tmbId: auth.tmbId, fileId });
    return { fileId, previewUrl: fileReadUrl(token, file.filename) };
  }

  async function open(token: string) {
    const claims = verifyFileToken(ctx.config.FILE_TOKEN_KEY, token);
    const file = await files.find(claims.bucketName, claims.fileId);
    if (!file) throw Errors.fileNotFound(`File ${claims.fileId} not found`);
    if (file.metadata.teamId !== claims.teamId) throw Errors.unAuthFile('The file token does not match the file');
    return { file, served: servedAs(file), stream: files.openStream(claims.bucketName, claims.fileId) };
  }

  /**
   * Stores a raster image (png, jpeg, gif, webp), judged by its bytes: the declared type is not
   * trusted, and SVG or HTML (script on our origin) never gets in. Stored with the sniffed type.
   */
  async function uploadImage(auth: AuthContext, input: { base64Img?: string; file?: UploadedFile; type: string; expiredTime?: Date; relatedId?: string }) {
    const field = input.file ? 'file' : 'base64Img';
    let binary: Buffer;
    if (input.file) {
      binary = input.file.buffer;
    } else {
      const text = input.base64Img ?? '';
      if (text.length > MAX_BASE64_CHARS) throw Errors.payloadTooLarge('Image too large');
      const match = /^data:[^,]*;base64,(.*)$/s.exec(text);
      binary = Buffer.from(match?.[1] ?? text, 'base64');
    }
    if (binary.length === 0) throw Errors.missingParams(`Invalid field '${field}': no image data`);
    if (binary.length > MAX_IMAGE_BYTES) throw Errors.payloadTooLarge(`Image too large: at most ${MAX_IMAGE_BYTES} bytes`);
    const mime = rasterImageType(binary);
    if (!mime) throw Errors.missingParams(`Invalid field '${field}': only PNG, JPEG, GIF and WebP images are accepted (judged by their content)`);
    const uploadedBy = await visitorQuota.admit(auth, binary.length);
    const id = await files.insertImage({ teamId: auth.teamId, binary, mime, type: input.type, expiredTime: input.expiredTime, relatedId: input.relatedId, uploadedBy });
    return `/api/system/img/${id}.${mime.split('/')[1]}`;
  }

  /** An image with the type its bytes show; anything else stored before (an SVG) is served as a download. */
  async function image(idWithExt: string) {
    const id = idWithExt.replace(/\.[A-Za-z0-9]+$/, '');
    const found = /^[0-9a-fA-F]{24}$/.test(id) ? await files.findImage(id) : null;
    if (!found) throw Errors.notFound(`Image ${idWithExt} not found`);
    const mime = rasterImageType(found.binary);
    return { binary: found.binary, contentType: mime ?? 'application/octet-stream', disposition: mime ? 'inline' : 'attachment' };
  }

  /** A preview's `sourceId` naming an uploaded file: its id, else a 400 naming the field. */
  function previewFileId(sourceId: string): string {
    if (!isObjectIdHex(sourceId)) throw Errors.missingParams("Invalid field 'sourceId': expected a 24-character hex file id");
    return sourceId;
  }

  /** The first characters of a preview source and its length: an uploaded file (uploader only; a large one read in a worker), or a web page. */
  async function previewContent(auth: AuthContext, input: { type: SourceType; sourceId: string; selector?: string; isQAImport?: boolean }) {
    let head: { head: string; length: number };
    if (input.type === 'fileLocal') {
      const { file, buffer } = await readUsableFile(ctx, auth, previewFileId(input.sourceId), { uploaderOnly: true });
      head = await headOfStoredFile(file, buffer, input.isQAImport, PREVIEW_CONTENT_CHARS);
    } else {
      const { text } = await readLinkInTurn(ctx, input.sourceId, input.selector, auth.teamId);
      head = { head: textHead(text, PREVIEW_CONTENT_CHARS), length: text.length };
    }
    return { previewContent: head.head, totalLength: head.length };
  }

  /**
   * The first chunks of a source as its import would cut them (first Q/A rows for a Q/A import),
   * from as little of it as gives the same ones: a text or CSV file's first bytes
   * (preview-file.ts), else the whole text, split from a prefix (preview-chunks.ts; a large text
   * in a worker, large-text.ts).
   */
  async function previewChunks(
    auth: AuthContext,
    input: { type: SourceType; sourceId: string; chunkSize: number; overlapRatio: number; customSplitChar?: string; selector?: string; isQAImport?: boolean },
  ) {
    const options = { chunkLen: input.chunkSize, overlapRatio: input.overlapRatio, customReg: input.customSplitChar ? [input.customSplitChar] : [] };
    if (input.type === 'fileLocal') {
      const { file, buffer } = await readUsableFile(ctx, auth, previewFileId(input.sourceId), { uploaderOnly: true });
      const fromStart = previewFromFileStart(file, buffer, { ...options, isQAImport: input.isQAImport });
      if (fromStart) return fromStart;
      // The whole file, as its import reads it: a large text or CSV file in a worker.
      if (input.isQAImport) return (await qaOfStoredFile(file, buffer)).slice(0, PREVIEW_CHUNK_COUNT);
      return (await previewChunksOfStoredFile(file, buffer, options)).map((q) => ({ q, a: '' }));
    }
    const { text } = await readLinkInTurn(ctx, input.sourceId, input.selector, auth.teamId);
    if (input.isQAImport) return (await qaOfText(text, { owner: auth.teamId })).slice(0, PREVIEW_CHUNK_COUNT);
    return (await previewChunksOfText(text, options, { owner: auth.teamId })).map((q) => ({ q, a: '' }));
  }

  /**
   * The pages of up to 20 links, read once the team's earlier link reads leave room, a few at a
   * time (link-read-turns.ts): each page but a tiny one is converted in a worker task, within the
   * team's few waiting places there. A request refused its turn is answered 429 before any link
   * is read; a link that fails gives an empty entry. `signal`: the client went away (its place in
   * the queue is given up, no more links are read).
   */
  async function urlFetch(auth: AuthContext, urlList: string[], selector?: string, signal?: AbortSignal) {
    const pages: { url: string; title: string; content: string; selector: string }[] = new Array(urlList.length);
    let next = 0;
    const fetchInTurn = async () => {
      // A client gone away: no link more is read for it (the one being read is cut).
      for (let at = next++; at < urlList.length && !signal?.aborted; at = next++) {
        const url = urlList[at]!;
        try {
          const page = await readLink(ctx, url, selector, { owner: auth.teamId, signal });
          pages[at] = { url, title: page.title, content: page.text, selector: page.selector };
        } catch {
          pages[at] = { url, title: '', content: '', selector: '' };
        }
      }
    };
    await ctx.linkReads.inTurn(auth.teamId, urlList.length, (width) => Promise.all(Array.from({ length: width }, fetchInTurn)), signal);
    return pages;
  }

  return { store, open, uploadImage, image, previewContent, previewChunks, urlFetch };
}

export type FileService = ReturnType<typeof createFileService>;
