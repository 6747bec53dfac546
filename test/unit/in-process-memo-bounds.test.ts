/**
 * In-process memos keyed by what callers choose stay bounded: the time zone spellings chat turns
 * format times in, the QPM values of share links. Measured as retained heap after many keys.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { formatChatTime } from '../../src/platform/chat/chat-time.js';
import { createShareQpmLimiter } from '../../src/platform/outlinks/qpm-limiter.js';

setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;
const heapUsed = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

/** The `i`-th upper/lower-case spelling of a zone name (a profile may store any). */
function spelling(name: string, i: number): string {
  let out = '';
  let bit = 0;
  for (const ch of name) {
    if (/[a-z]/i.test(ch)) {
      out += (i >> bit) & 1 ? ch.toUpperCase() : ch.toLowerCase();
      bit += 1;
    } else out += ch;
  }
  return out;
}

describe('memos keyed by caller-chosen values', () => {
  it('the chat time memo keeps at most 1,000 zones, whatever spellings turns bring (each was ~1.2 KB for good)', () => {
    const at = new Date('2026-01-01T00:00:00Z');
    const zone = 'America/Argentina/ComodRivadavia';
    for (let i = 0; i < 2_000; i++) formatChatTime(at, spelling(zone, i));
    const before = heapUsed();
    const n = 6_000;
    for (let i = 2_000; i < 2_000 + n; i++) expect(formatChatTime(at, spelling(zone, i))).toBe('2025-12-31 21:00:00 Wednesday');
    // Without the bound: ~7 MB more; with it, at most the 1,000 entries of one round.
    expect(heapUsed() - before).toBeLessThan(3 * 1024 * 1024);
  });

  it('the share-link QPM limiter keeps a limiter for a few QPM values, not one per value ever used', async () => {
    const slots = { find: () => ({ toArray: async () => [] }), insertOne: async () => ({}) };
    const qpm = createShareQpmLimiter({ collection: () => slots } as never, () => 0);
    await qpm.take('share', 1);
    const before = heapUsed();
    const n = 30_000;
    for (let value = 2; value <= n; value++) expect((await qpm.take('share', value)).ok).toBe(true);
    const grown = heapUsed() - before;
    // Used after measuring, so that its memo is alive when measured.
    expect((await qpm.take('share', 1)).ok).toBe(true);
    // Without the bound: ~15 MB more (about 500 bytes per value).
    expect(grown).toBeLessThan(4 * 1024 * 1024);
  });
});
