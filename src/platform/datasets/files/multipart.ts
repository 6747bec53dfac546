import type { FastifyRequest } from 'fastify';
import { Errors } from '../../../infra/errors.js';

export interface UploadedFile {
  buffer: Buffer;
  filename: string;
  mimetype: string;
}

/** Reads one multipart request: the `file` part into memory (bounded by the upload limit) and text fields. */
export async function readMultipart(request: FastifyRequest, maxBytes: number): Promise<{ file?: UploadedFile; fields: Record<string, string> }> {
  if (!request.isMultipart()) throw Errors.unsupportedMediaType('Expected a multipart/form-data body');
  const fields: Record<string, string> = {};
  let file: UploadedFile | undefined;
  try {
    for await (const part of request.parts({ limits: { fileSize: maxBytes, files: 1 } })) {
      if (part.type === 'file') {
        const buffer = await part.toBuffer();
        // Clients URL-encode file names (non-ASCII names survive multipart that way).
        let filename = part.filename;
        try {
          filename = decodeURIComponent(part.filename);
        } catch {
          // Not encoded: keep as sent.
        }
        file = { buffer, filename, mimetype: part.mimetype };
      } else if (typeof part.value === 'string') {
        fields[part.fieldname] = part.value;
      }
    }
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw Errors.payloadTooLarge(`The file is larger than the upload limit of ${maxBytes} bytes`);
    if (code === 'FST_FILES_LIMIT') throw Errors.missingParams('Only one file may be uploaded per request');
    throw error;
  }
  return { file, fields };
}
