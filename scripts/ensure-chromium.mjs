// Installs Debian's Chromium when it is missing, for the docs page's browser test
// (test/integration/docs-page.test.ts drives it with playwright-core). Bounded: a failed or slow
// install never hangs the suite; it is reported, and the browser test then fails with its own
// message naming what to install.
import { spawnSync } from 'node:child_process';

const INSTALL_TIMEOUT_MS = 10 * 60_000;
const UPDATE_TIMEOUT_MS = 3 * 60_000;

function hasCommand(name) {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

/** Runs an apt-get command as root (sudo -n when not root: never waits for a password). */
function aptGet(args, timeout) {
  const apt = ['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', ...args];
  const [command, ...commandArgs] = process.getuid?.() === 0 ? apt : ['sudo', '-n', ...apt];
  const result = spawnSync(command, commandArgs, { stdio: ['ignore', 'inherit', 'inherit'], timeout });
  if (result.error?.code === 'ETIMEDOUT') return `timed out after ${Math.round(timeout / 1000)} s`;
  if (result.error) return result.error.message;
  return result.status === 0 ? null : `exit code ${result.status}`;
}

/** True when chromium is available afterwards. */
export function ensureChromium(log = console.error) {
  if (hasCommand('chromium')) return true;
  if (process.env.SKIP_CHROMIUM_INSTALL) {
    log('[test] chromium is missing and SKIP_CHROMIUM_INSTALL is set: the docs page browser test will fail');
    return false;
  }
  if (!hasCommand('apt-get') || (process.getuid?.() !== 0 && !hasCommand('sudo'))) {
    log('[test] chromium is missing and cannot be installed here (needs apt-get as root or sudo): the docs page browser test will fail');
    return false;
  }
  log("[test] chromium is missing: installing Debian's chromium for the docs page browser test...");
  const install = ['install', '-y', '--no-install-recommends', 'chromium'];
  // A fresh machine may have no package lists yet: update once, then retry.
  let problem = aptGet(install, INSTALL_TIMEOUT_MS);
  if (problem && !problem.startsWith('timed out')) problem = aptGet(['update'], UPDATE_TIMEOUT_MS) ?? aptGet(install, INSTALL_TIMEOUT_MS);
  if (problem || !hasCommand('chromium')) {
    log(`[test] installing chromium failed (${problem ?? 'not on PATH afterwards'}): the docs page browser test will fail`);
    return false;
  }
  return true;
}
