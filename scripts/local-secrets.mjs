// Secrets for `npm run up`: random per machine, made on the first start and kept in the data
// directory (not in the repository), so sessions survive restarts and no key is public. Only
// Node's own modules: this runs before the npm packages are installed.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export const LOCAL_SECRET_NAMES = ['TOKEN_KEY', 'ROOT_KEY', 'CLUSTER_JWT_SECRET', 'FILE_TOKEN_KEY'];

/** The stored secrets of `file`, any missing one made and stored (readable by its owner only). */
export function localSecrets(file) {
  const stored = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  const secrets = {};
  let changed = false;
  for (const name of LOCAL_SECRET_NAMES) {
    if (typeof stored[name] === 'string' && stored[name].length >= 32) {
      secrets[name] = stored[name];
    } else {
      secrets[name] = randomBytes(32).toString('base64url');
      changed = true;
    }
  }
  if (changed) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
  }
  return secrets;
}
