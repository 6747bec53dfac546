/** `npm run up`'s secrets: random per machine, kept across starts, readable by their owner only. */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error a plain ES module of the scripts, without types
import { LOCAL_SECRET_NAMES, localSecrets } from '../../scripts/local-secrets.mjs';

const dirs: string[] = [];
const freshFile = () => {
  const dir = mkdtempSync(join(tmpdir(), 'local-secrets-'));
  dirs.push(dir);
  return join(dir, 'data', 'local-secrets.json');
};

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('local secrets of npm run up', () => {
  it('makes each secret on the first start, long and random, and stores it for its owner only', () => {
    const file = freshFile();
    const first = localSecrets(file) as Record<string, string>;
    expect(Object.keys(first).sort()).toEqual([...LOCAL_SECRET_NAMES].sort());
    for (const value of Object.values(first)) expect(value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Set(Object.values(first)).size).toBe(LOCAL_SECRET_NAMES.length);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(first);
    // Another machine (another data directory) gets other secrets.
    expect(localSecrets(freshFile())).not.toEqual(first);
  });

  it('gives the stored secrets back on later starts, and makes only one that is missing or too short', () => {
    const file = freshFile();
    const first = localSecrets(file) as Record<string, string>;
    expect(localSecrets(file)).toEqual(first);
    writeFileSync(file, JSON.stringify({ ...first, ROOT_KEY: 'short', FILE_TOKEN_KEY: undefined }));
    const mended = localSecrets(file) as Record<string, string>;
    expect(mended.TOKEN_KEY).toBe(first.TOKEN_KEY);
    expect(mended.CLUSTER_JWT_SECRET).toBe(first.CLUSTER_JWT_SECRET);
    expect(mended.ROOT_KEY).not.toBe('short');
    expect(mended.ROOT_KEY).toHaveLength(43);
    expect(mended.FILE_TOKEN_KEY).toHaveLength(43);
    expect(localSecrets(file)).toEqual(mended);
  });
});
