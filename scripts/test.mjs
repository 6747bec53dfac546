#!/usr/bin/env node
// The whole test suite: dependencies, typecheck, lint, then vitest against a real database
// (MONGODB_URI when set, otherwise a local mongod/FerretDB started by the test setup).
import { spawnSync } from 'node:child_process';
import { ensureDependencies } from './ensure-deps.mjs';
import { ensureFerretDb } from './local-db.mjs';

ensureDependencies();
if (!process.env.MONGODB_URI) {
  // Build the database binary up front so the first test file does not pay for it.
  const hasMongod = (process.env.PATH ?? '').split(':').some((dir) => dir && spawnSync('test', ['-x', `${dir}/mongod`]).status === 0);
  if (!hasMongod) ensureFerretDb();
}

const steps = [
  ['typecheck', ['npx', 'tsc', '-p', 'tsconfig.json', '--noEmit']],
  ['lint', ['npx', 'biome', 'lint', 'src', 'test', 'bench', 'scripts']],
  ['tests', ['npx', 'vitest', 'run', ...process.argv.slice(2)]],
];
for (const [name, [command, ...args]] of steps) {
  console.error(`\n[test] ${name}: ${command} ${args.join(' ')}`);
  const result = spawnSync(command, args, { stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`[test] ${name} failed`);
    process.exit(result.status ?? 1);
  }
}
