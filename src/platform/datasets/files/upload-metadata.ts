import { Errors } from '../../../infra/errors.js';
import { MAX_FREE_FORM_KEYS } from '../../../infra/zod.js';

const MAX_DEPTH = 8;

/**
 * Checks the `metadata` JSON of an upload before it goes into the GridFS file document, where
 * other modules query it by key (chatId, teamId): keys with `.` or `$`, NUL characters, unpaired
 * surrogates, arrays inside arrays and deep nesting cannot be stored on every MongoDB-compatible
 * server (or not as sent), so they are a 400 naming the key instead of a failed write; more than
 * MAX_FREE_FORM_KEYS keys in all is refused as other free-form objects are. Its strings were
 * mended by the request guard when the field was parsed (multipart.ts jsonField). Returns the
 * object as given.
 */
export function checkUploadMetadata(value: unknown, field = 'metadata'): Record<string, unknown> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw Errors.missingParams(`Invalid field '${field}': must be a JSON object`);
  const keys = { count: 0, field };
  visit(value, field, 0, false, keys);
  return value as Record<string, unknown>;
}

/** Whether a string is not well-formed UTF-16 (String.prototype.isWellFormed, in Node 20 but not in the ES2023 typings). */
const malformed = (text: string) => !(text as string & { isWellFormed(): boolean }).isWellFormed();

function visit(value: unknown, path: string, depth: number, inArray: boolean, keys: { count: number; field: string }): void {
  if (depth > MAX_DEPTH) throw Errors.missingParams(`Invalid field '${path}': nested more than ${MAX_DEPTH} levels`);
  if (typeof value === 'string') {
    if (value.includes('\u0000')) throw Errors.missingParams(`Invalid field '${path}': must not contain NUL characters`);
    return;
  }
  // JSON's 1e400 parses to Infinity, which is no BSON a database must take (FerretDB refuses it).
  if (typeof value === 'number' && !Number.isFinite(value)) throw Errors.missingParams(`Invalid field '${path}': must be a finite number`);
  if (Array.isArray(value)) {
    if (inArray) throw Errors.missingParams(`Invalid field '${path}': arrays inside arrays cannot be stored`);
    for (const [i, item] of value.entries()) visit(item, `${path}[${i}]`, depth + 1, true, keys);
    return;
  }
  if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (++keys.count > MAX_FREE_FORM_KEYS) throw Errors.missingParams(`Invalid field '${keys.field}': more than ${MAX_FREE_FORM_KEYS} keys (counted at every level of nesting)`);
      if (key === '' || key.includes('.') || key.includes('$') || key.includes('\u0000') || malformed(key)) {
        throw Errors.missingParams(
          `Invalid key '${key.replaceAll('\u0000', '\\0')}' in field '${path}': metadata keys must be non-empty, well-formed text and contain no '.', '$' or NUL`,
        );
      }
      visit(item, `${path}.${key}`, depth + 1, false, keys);
    }
  }
}
