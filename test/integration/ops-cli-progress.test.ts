import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture } from '../fixtures/cluster/helpers.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * `cluster nodes import` and `pods import` on large files, through the real CLI process:
 * progress lines on stderr (one per written chunk), the JSON summary alone on stdout.
 */
const run = promisify(execFile);
const COUNT = 2500;
let t: TestApp;
let dir: string;

function realCli(args: string[]) {
  return run('npx', ['tsx', 'src/cli.ts', 'cluster', ...args], {
    cwd: process.cwd(),
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'silent', MONGODB_URI: t.config.MONGODB_URI, CLUSTER_JWT_SECRET: t.config.CLUSTER_JWT_SECRET },
    maxBuffer: 64 * 1024 * 1024,
  });
}

/** A List of `count` copies of the fixture's first item, each with its own name (and uid). */
function bigList(fixtureName: string, count: number, rename: (item: Record<string, unknown>, index: number) => void): string {
  const list = JSON.parse(readFileSync(fixture(fixtureName), 'utf8')) as { items: Record<string, unknown>[] };
  const template = JSON.stringify(list.items[0]);
  const items = Array.from({ length: count }, (_, index) => {
    const item = JSON.parse(template) as Record<string, unknown>;
    rename(item, index);
    return item;
  });
  const path = join(dir, fixtureName.replace('.json', `-${count}.json`));
  writeFileSync(path, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  return path;
}

beforeAll(async () => {
  t = await buildTestApp();
  dir = mkdtempSync(join(tmpdir(), 'ops-cli-'));
});

afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

const progressLines = (stderr: string) => stderr.split('\n').filter((line) => line.startsWith('cluster '));

describe('cluster imports of large files', () => {
  it('nodes import reports progress on stderr and keeps the summary on stdout', async () => {
    const path = bigList('nodes.json', COUNT, (item, index) => {
      const metadata = item.metadata as Record<string, unknown>;
      metadata.name = `bulk-node-${index}`;
      metadata.uid = `bulk-node-uid-${index}`;
      metadata.labels = { ...(metadata.labels as object), 'kubernetes.io/hostname': `bulk-node-${index}` };
    });
    const { stdout, stderr } = await realCli(['nodes', 'import', path]);
    const summary = JSON.parse(stdout);
    expect(summary).toMatchObject({ kind: 'NodeList', created: COUNT, updated: 0 });
    expect(summary.names).toHaveLength(COUNT);
    const lines = progressLines(stderr);
    expect(lines[0]).toMatch(new RegExp(`^cluster nodes import: read \\d+\\.\\d MB from ${path}, validating$`));
    expect(lines.slice(1)).toEqual([
      `cluster nodes import: ${COUNT} items valid, writing`,
      `cluster nodes import: written 1000/${COUNT} (40%)`,
      `cluster nodes import: written 2000/${COUNT} (80%)`,
      `cluster nodes import: written ${COUNT}/${COUNT} (100%)`,
    ]);
    expect(await t.app.mongo.db.collection('cluster_nodes').countDocuments({ _id: { $regex: '^bulk-node-' } } as never)).toBe(COUNT);
  }, 120_000);

  it('pods import does the same, and a small file prints only its summary', async () => {
    const path = bigList('pods.json', COUNT, (item, index) => {
      const metadata = item.metadata as Record<string, unknown>;
      metadata.name = `bulk-pod-${index}`;
      metadata.uid = `bulk-pod-uid-${index}`;
    });
    const large = await realCli(['pods', 'import', path]);
    expect(JSON.parse(large.stdout)).toMatchObject({ kind: 'PodList', created: COUNT, count: COUNT });
    expect(progressLines(large.stderr)).toHaveLength(5);
    expect(progressLines(large.stderr).at(-1)).toBe(`cluster pods import: written ${COUNT}/${COUNT} (100%)`);

    const small = await realCli(['pods', 'import', fixture('pods.json')]);
    expect(JSON.parse(small.stdout)).toMatchObject({ kind: 'PodList' });
    expect(progressLines(small.stderr)).toEqual([]);
  }, 120_000);
});
