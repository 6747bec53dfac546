import { describe, expect, it } from 'vitest';
import type { AnswerMemo } from '../../src/infra/answer-memo.js';
import { nodeSchema, toStoredNode } from '../../src/cluster/nodes/node-document.js';
import { NodeSnapshot } from '../../src/cluster/nodes/node-index.js';
import { planNodeList, type QueryValue } from '../../src/cluster/nodes/node-query.js';
import type { NodeIndexEntry } from '../../src/cluster/nodes/nodes.repo.js';

/**
 * The node list's answer memo (one per snapshot): bounded by bytes, and keyed by what decides the
 * answer, so query strings that differ only in ignored parameters share one entry.
 */
const MAX_PAGE_BYTES = 64 * 1024 * 1024;
const NOW = new Date('2024-03-01T00:00:00Z');

function entry(name: string, filler = 0): NodeIndexEntry {
  const node = {
    metadata: { name, creationTimestamp: '2024-03-01T00:00:00Z', labels: { role: 'worker' }, annotations: { note: 'x'.repeat(filler) } },
    status: { allocatable: { cpu: '2', memory: '4Gi' }, conditions: [{ type: 'Ready', status: 'True' }] },
  };
  const { updatedAt: _updatedAt, ...stored } = toStoredNode(nodeSchema.parse(node), NOW) as ReturnType<typeof toStoredNode> & { updatedAt?: unknown };
  return stored as NodeIndexEntry;
}

function queryOf(raw: string): Record<string, QueryValue> {
  const query: Record<string, QueryValue> = {};
  for (const [key, value] of new URLSearchParams(raw)) {
    const existing = query[key];
    query[key] = existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value];
  }
  return query;
}

/** What the route does: the memoised bytes, or the answer computed and its bytes kept (keepSentAnswer). */
async function serve(snapshot: NodeSnapshot, raw: string, onPlan: () => void = () => undefined) {
  const answer = snapshot.pageAnswer(raw, () => {
    onPlan();
    return planNodeList(queryOf(raw));
  });
  let bytes = answer.memo.get(answer.key);
  if (bytes === undefined) {
    bytes = Buffer.from(JSON.stringify(await answer.compute()));
    answer.memo.set(answer.key, bytes);
  }
  return { answer, bytes };
}

describe('node list answer memo', () => {
  it('query strings that differ only in ignored parameters share one entry; a repeated string is not planned again', async () => {
    const snapshot = new NodeSnapshot([entry('a'), entry('b'), entry('c')], new Map(), false, false);
    let plans = 0;
    const countPlan = () => {
      plans++;
    };
    const first = await serve(snapshot, 'sortBy=name', countPlan);
    const keys = new Set<string>();
    for (let index = 0; index < 64; index++) {
      const { answer, bytes } = await serve(snapshot, `sortBy=name&x=${index}`, countPlan);
      keys.add(answer.key);
      expect(bytes.equals(first.bytes)).toBe(true);
    }
    // `limit=abc` is no limit, as absent: the same answer too.
    keys.add((await serve(snapshot, 'limit=abc&sortBy=name', countPlan)).answer.key);
    expect([...keys]).toEqual([first.answer.key]);
    expect(first.answer.memo.size).toBe(1);
    expect(plans).toBe(66);
    // Hot path: a query string seen before costs no planning.
    await serve(snapshot, 'sortBy=name&x=3', countPlan);
    await serve(snapshot, 'sortBy=name', countPlan);
    expect(plans).toBe(66);
    // A different answer is its own entry.
    const other = await serve(snapshot, 'sortBy=name&ascending=true');
    expect(other.answer.key).not.toBe(first.answer.key);
    expect(other.answer.memo.size).toBe(2);
  });

  it(`keeps at most ${MAX_PAGE_BYTES / 1024 / 1024} MiB of pages per snapshot, the most recent first`, async () => {
    // 1,000 nodes of ~4 KB: each answer below is ~4 MB, 40 of them ~160 MB.
    const entries = Array.from({ length: 1000 }, (_, index) => entry(`node-${String(index).padStart(4, '0')}`, 4000));
    const snapshot = new NodeSnapshot(entries, new Map(), false, false);
    const served: { key: string; size: number }[] = [];
    let memo: AnswerMemo | undefined;
    for (let index = 0; index < 40; index++) {
      const { answer, bytes } = await serve(snapshot, `limit=${1000 - index}&sortBy=name`);
      served.push({ key: answer.key, size: bytes.length });
      memo = answer.memo;
    }
    expect(served.reduce((sum, { size }) => sum + size, 0)).toBeGreaterThan(2 * MAX_PAGE_BYTES);
    if (!memo) throw new Error('nothing served');
    // Read from the newest: each read makes its entry the most recent, but none of these is evicted.
    const held = [...served].reverse().filter(({ key }) => memo?.get(key) !== undefined);
    expect(held.reduce((sum, { size }) => sum + size, 0)).toBeLessThanOrEqual(MAX_PAGE_BYTES);
    expect(held.length).toBeGreaterThan(0);
    expect(held[0]?.key).toBe(served.at(-1)?.key);
  });

  it('an answer heavier than the whole bound is sent but not kept, and does not empty the memo', async () => {
    const snapshot = new NodeSnapshot([entry('small'), entry('huge', MAX_PAGE_BYTES + 1024)], new Map(), false, false);
    const small = await serve(snapshot, 'names=small');
    const huge = await serve(snapshot, '');
    expect(huge.bytes.length).toBeGreaterThan(MAX_PAGE_BYTES);
    // Booleans, not the buffers: a failure must not print 64 MiB.
    expect(huge.answer.memo.get(huge.answer.key) === undefined).toBe(true);
    expect(small.answer.memo.get(small.answer.key)?.equals(small.bytes)).toBe(true);
  });
});
