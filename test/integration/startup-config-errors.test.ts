import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * A setting that passes config.ts's check but fails later (the driver's own parse of the URI,
 * the model file) stops the server with one message naming the variable, exit 1, no stack: the
 * driver's error named no variable, and V8's JSON error quoted the file around the fault, a key
 * included.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function startServer(env: Record<string, string>) {
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'warn', PORT: '0', HOST: '127.0.0.1', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

const modelFile = join(mkdtempSync(join(tmpdir(), 'startup-config-')), 'models.json');
writeFileSync(modelFile, '{"llmModels":[{"model":"gpt-4o","name":"gpt","requestUrl":"https://x.example/v1","requestAuth":sk-live-SECRETKEY123456789}]}');

describe.each([
  ['MONGODB_URI', { MONGODB_URI: 'mongodb://db.internal:99999/platform' }, /MONGODB_URI: .*99999/],
  ['MODEL_CONFIG_PATH', { MODEL_CONFIG_PATH: modelFile }, /MODEL_CONFIG_PATH .*models\.json: not valid JSON/],
])('a bad %s', (_name, env, message) => {
  it('stops the server with one message naming it, no stack and no secret', () => {
    const { status, output } = startServer(env);
    expect(status).toBe(1);
    expect(output).toMatch(message);
    expect(output).not.toMatch(/\n\s+at /);
    expect(output).not.toContain('SECRETKEY');
  }, 90_000);
});
