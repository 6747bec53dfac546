#!/usr/bin/env node
// The whole test suite: dependencies, typecheck, lint, then vitest against a real database
// (MONGODB_URI when set, otherwise a local mongod/FerretDB started by the test setup).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { ensureChromium } from './ensure-chromium.mjs';
import { ensureDependencies } from './ensure-deps.mjs';
import { ensureFerretDb } from './local-db.mjs';

ensureDependencies();
if (!process.env.MONGODB_URI) {
  // Build the database binary up front so the first test file does not pay for it.
  const hasMongod = (process.env.PATH ?? '').split(':').some((dir) => dir && spawnSync('test', ['-x', `${dir}/mongod`]).status === 0);
  if (!hasMongod) ensureFerretDb();
}

// The docs page is tested in a real browser (Debian's chromium); without it that test fails.
ensureChromium();

const REPORT = '.cache/vitest-report.json';
rmSync(REPORT, { force: true });

const steps = [
  ['typecheck', ['npx', 'tsc', '-p', 'tsconfig.json', '--noEmit']],
  ['lint', ['npx', 'biome', 'lint', 'src', 'test', 'bench', 'scripts']],
  ['tests', ['npx', 'vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${REPORT}`, ...process.argv.slice(2)]],
];
for (const [name, [command, ...args]] of steps) {
  console.error(`\n[test] ${name}: ${command} ${args.join(' ')}`);
  const result = spawnSync(command, args, { stdio: 'inherit' });
  if (name === 'tests' && existsSync(REPORT)) {
    // The plain closing line any CI can read, whatever the runner's own format.
    const report = JSON.parse(readFileSync(REPORT, 'utf8'));
    console.log(`tests: ${report.numPassedTests} passed, ${report.numFailedTests} failed`);
  }
  if (result.status !== 0) {
    console.error(`[test] ${name} failed`);
    process.exit(result.status ?? 1);
  }
}
