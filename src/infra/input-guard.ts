import { Errors } from './errors.js';

/**
 * Where the first U+0000 is in a request value: the dotted path of the string (or of the object
 * whose key) holding it, `''` for the value itself, or null when there is none. PostgreSQL-backed
 * servers (FerretDB) cannot store the character, and no field has a use for it. Iterative, so a
 * deeply nested body cannot overflow the stack.
 */
export function findNulCharacter(value: unknown): string | null {
  const pending: { value: unknown; path: string }[] = [{ value, path: '' }];
  while (pending.length > 0) {
    const { value: current, path } = pending.pop() as { value: unknown; path: string };
    if (typeof current === 'string') {
      if (current.includes('\0')) return path;
      continue;
    }
    if (typeof current !== 'object' || current === null || Buffer.isBuffer(current)) continue;
    for (const [key, child] of Object.entries(current)) {
      if (key.includes('\0')) return path;
      pending.push({ value: child, path: path ? `${path}.${key}` : key });
    }
  }
  return null;
}

/** Refuses a value holding U+0000 with a 400 naming the field (`where` names the value itself). */
export function assertNoNulCharacter(value: unknown, where = 'request'): void {
  const path = findNulCharacter(value);
  if (path !== null) throw Errors.missingParams(`Invalid field '${path || where}': must not contain the NUL character (U+0000)`);
}
