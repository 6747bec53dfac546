import type { FastifyRequest } from 'fastify';
import { Errors, isAppError } from '../../../infra/errors.js';

export interface UploadedFile {
  buffer: Buffer;
  filename: string;
  mimetype: string;
}

const MAX_FILENAME_CHARS = 1000;

/** A client file name: URL-decoded when encoded (non-ASCII names survive multipart that way), control characters removed. */
function cleanFilename(raw: string): string {
  let filename = raw;
  try {
    filename = decodeURIComponent(raw);
  } catch {
    // Not encoded: keep as sent.
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters (NUL above all) never belong in a stored name
  filename = filename.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  if (filename.length > MAX_FILENAME_CHARS) throw Errors.missingParams(`Invalid field 'file': the file name is longer than ${MAX_FILENAME_CHARS} characters`);
  return filename || 'file';
}

/**
 * Reads one multipart request: the `file` part into memory (bounded by the upload limit) and
 * text fields. Nothing is stored until the whole body has been read, so a truncated or
 * malformed body is a 400 and never a partial write.
 */
export async function readMultipart(request: FastifyRequest, maxBytes: number): Promise<{ file?: UploadedFile; fields: Record<string, string> }> {
  if (!request.isMultipart()) throw Errors.unsupportedMediaType('Expected a multipart/form-data body');
  const fields: Record<string, string> = {};
  let file: UploadedFile | undefined;
  try {
    for await (const part of request.parts({ limits: { fileSize: maxBytes, files: 1 } })) {
      if (part.type === 'file') {
        const buffer = await part.toBuffer();
        file = { buffer, filename: cleanFilename(part.filename), mimetype: part.mimetype };
      } else if (typeof part.value === 'string') {
        if (part.value.includes('\u0000')) throw Errors.missingParams(`Invalid field '${part.fieldname}': must not contain NUL characters`);
        fields[part.fieldname] = part.value;
      }
    }
  } catch (error) {
    if (isAppError(error)) throw error;
    const code = (error as { code?: string }).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw Errors.payloadTooLarge(`The file is larger than the upload limit of ${maxBytes} bytes`);
    if (code === 'FST_FILES_LIMIT') throw Errors.missingParams('Only one file may be uploaded per request');
    // Everything read here comes from the request body: a parse or stream failure (truncated
    // body, premature close, bad boundary) is the client's, and nothing was stored.
    throw Errors.missingParams('The multipart body is truncated or malformed');
  }
  return { file, fields };
}

/** The path of the first string (value or key) in parsed JSON that holds a NUL character, if any. */
export function pathWithNul(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = pathWithNul(item, `${path}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes('\u0000')) return `${path} (a key)`;
      const found = pathWithNul(item, `${path}.${key}`);
      if (found) return found;
    }
  }
  return undefined;
}
