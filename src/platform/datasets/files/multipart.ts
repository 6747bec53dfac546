import type { FastifyRequest } from 'fastify';
import { Errors } from '../../../infra/errors.js';
import { assertSafeInput } from '../../../infra/input-guard.js';

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

/** Text fields of one form by default: the upload forms send a handful (bucketName, metadata, data…). */
export const DEFAULT_MAX_FIELDS = 20;
/** The longest text field value (busboy's own default, which it truncates silently past). */
const MAX_FIELD_BYTES = 1024 * 1024;

const tooManyFields = (maxFields: number) => Errors.missingParams(`Too many form fields: at most ${maxFields} text fields besides the one 'file'`);

/**
 * Reads one multipart request: the `file` part into memory (bounded by the upload limit) and
 * at most `maxFields` text fields of at most 1 MiB each (text fields are held in memory too, and
 * the body limit does not bound a multipart stream). Nothing is stored until the whole body has
 * been read, so a truncated or malformed body is a 400 and never a partial write.
 */
export async function readMultipart(
  request: FastifyRequest,
  maxBytes: number,
  maxFields = DEFAULT_MAX_FIELDS,
): Promise<{ file?: UploadedFile; fields: Record<string, string> }> {
  if (!request.isMultipart()) throw Errors.unsupportedMediaType('Expected a multipart/form-data body');
  const fields: Record<string, string> = {};
  let file: UploadedFile | undefined;
  let fieldCount = 0;
  try {
    // The parser's field limit is one above ours: the field past ours still arrives and is
    // refused here, before the parser could cut a later file short (a "truncated upload").
    for await (const part of request.parts({ limits: { fileSize: maxBytes, files: 1, fields: maxFields + 1, fieldSize: MAX_FIELD_BYTES } })) {
      if (part.type === 'file') {
        const buffer = await part.toBuffer();
        file = { buffer, filename: cleanFilename(part.filename), mimetype: part.mimetype };
        continue;
      }
      if (++fieldCount > maxFields) throw tooManyFields(maxFields);
      if (part.valueTruncated) throw Errors.missingParams(`Invalid field '${part.fieldname}': longer than ${MAX_FIELD_BYTES} bytes`);
      if (typeof part.value === 'string') {
        assertSafeInput(part.value, part.fieldname);
        fields[part.fieldname] = part.value;
      }
    }
  } catch (error) {
    // A truncated or malformed body is mapped to a 400 by the central error handler; nothing
    // was stored, since the whole body is read first. These deserve a precise message.
    const code = (error as { code?: string }).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw Errors.payloadTooLarge(`The file is larger than the upload limit of ${maxBytes} bytes`);
    if (code === 'FST_FILES_LIMIT') throw Errors.missingParams('Only one file may be uploaded per request');
    if (code === 'FST_FIELDS_LIMIT' || code === 'FST_PARTS_LIMIT') throw tooManyFields(maxFields);
    throw error;
  }
  return { file, fields };
}

/**
 * A form field holding JSON (`data`, `metadata`): an absent field is `{}`. Whether the value is
 * the right shape is for the caller's schema; text that is not JSON is refused here, and the
 * parsed value passes the request guard as a JSON body does (its escapes, `\u0000` or `1e400`,
 * become what the guard refuses only once parsed; the field's text passed it already).
 */
export function jsonField(fields: Record<string, string>, name: string): unknown {
  const text = fields[name];
  if (text === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text) as unknown;
  } catch {
    throw Errors.missingParams(`Invalid field '${name}': must be a JSON object`);
  }
  // Held under its name, so that a problem is named from the field and a string is mended in place.
  const held = { [name]: parsed };
  assertSafeInput(held);
  return held[name];
}
