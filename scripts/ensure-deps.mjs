// Installs npm dependencies when they are missing or older than the lock file, so that
// `npm test` and `npm run up` work on a fresh clone before `npm install` has run.
import { execSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';

export function ensureDependencies() {
  const marker = 'node_modules/.package-lock.json';
  const lock = existsSync('package-lock.json') ? 'package-lock.json' : 'package.json';
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  console.error('[setup] installing npm dependencies...');
  // Not `npm ci`: registries that serve only this platform's optional packages (biome, rollup
  // binaries) produce lock files that `npm ci` rejects; `npm install` keeps the locked versions.
  execSync('npm install --no-audit --no-fund', { stdio: 'inherit' });
}
