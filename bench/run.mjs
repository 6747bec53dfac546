// Runs every bench script in turn (or the ones named): `npm run bench -- readyz cluster-nodes`.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

const wanted = process.argv.slice(2);
const scripts = readdirSync('bench')
  // Helpers (the libraries and fixtures, this runner, the servers other scripts start) are not benchmarks,
  // compare-builds needs the revision to compare with, and oncpu-profile is a diagnosis that needs `perf`.
  .filter((file) => file.endsWith('.mjs') && !['lib.mjs', 'datasets-common.mjs', 'run.mjs', 'profiled-server.mjs', 'baseline-server.mjs', 'fixtures.mjs', 'compare-builds.mjs', 'oncpu-profile.mjs'].includes(file))
  .filter((file) => wanted.length === 0 || wanted.includes(file.replace(/\.mjs$/, '')));
let failed = 0;
for (const script of scripts) {
  console.log(`\n## ${script}`);
  const result = spawnSync(process.execPath, [`bench/${script}`], { stdio: 'inherit' });
  if (result.status !== 0) failed++;
}
process.exit(failed > 0 ? 1 : 0);
