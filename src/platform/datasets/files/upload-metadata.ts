import { Errors } from '../../../infra/errors.js';

const MAX_DEPTH = 8;

/**
 * Checks the `metadata` JSON of an upload before it goes into the GridFS file document, where
 * other modules query it by key (chatId, teamId): keys with `.` or `$`, NUL characters, arrays
 * inside arrays and deep nesting cannot be stored on every MongoDB-compatible server, so they
 * are a 400 naming the key instead of a failed write. Returns the object as given.
 */
export function checkUploadMetadata(value: unknown, field = 'metadata'): Record<string, unknown> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw Errors.missingParams(`Invalid field '${field}': must be a JSON object`);
  visit(value, field, 0, false);
  return value as Record<string, unknown>;
}

function visit(value: unknown, path: string, depth: number, inArray: boolean): void {
  if (depth > MAX_DEPTH) throw Errors.missingParams(`Invalid field '${path}': nested more than ${MAX_DEPTH} levels`);
  if (typeof value === 'string') {
    if (value.includes('\u0000')) throw Errors.missingParams(`Invalid field '${path}': must not contain NUL characters`);
    return;
  }
  // JSON's 1e400 parses to Infinity, which is no BSON a database must take (FerretDB refuses it).
  if (typeof value === 'number' && !Number.isFinite(value)) throw Errors.missingParams(`Invalid field '${path}': must be a finite number`);
  if (Array.isArray(value)) {
    if (inArray) throw Errors.missingParams(`Invalid field '${path}': arrays inside arrays cannot be stored`);
    for (const [i, item] of value.entries()) visit(item, `${path}[${i}]`, depth + 1, true);
    return;
  }
  if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key === '' || key.includes('.') || key.includes('$') || key.includes('\u0000')) {
        throw Errors.missingParams(`Invalid key '${key.replaceAll('\u0000', '\\0')}' in field '${path}': metadata keys must be non-empty and contain no '.', '$' or NUL`);
      }
      visit(item, `${path}.${key}`, depth + 1, false);
    }
  }
}
