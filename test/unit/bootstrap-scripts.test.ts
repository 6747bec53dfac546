/**
 * `npm run up` and `npm test` install the npm packages themselves, so the scripts they start, and
 * everything those import statically, may use only Node's own modules: a package imported before
 * the install would fail on a fresh clone before the install could run.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const STATIC_IMPORT = /^import\s+(?:[^'"]*?\s+from\s+)?['"]([^'"]+)['"]/gm;

/** Every bare specifier imported statically by `entry` and the local files it imports. */
function packagesImportedBefore(entry: string): string[] {
  const seen = new Set<string>();
  const packages: string[] = [];
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const [, specifier] of readFileSync(file, 'utf8').matchAll(STATIC_IMPORT)) {
      if (specifier === undefined) continue;
      if (specifier.startsWith('.')) visit(resolve(dirname(file), specifier));
      else if (!specifier.startsWith('node:')) packages.push(`${file}: ${specifier}`);
    }
  };
  visit(resolve(entry));
  return packages;
}

describe('bootstrap scripts', () => {
  for (const script of ['up.mjs', 'test.mjs']) {
    it(`scripts/${script} imports no npm package before it installs them`, () => {
      expect(packagesImportedBefore(join('scripts', script))).toEqual([]);
    });
  }
});
