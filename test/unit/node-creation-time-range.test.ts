// A node's creationTimestamp must have a four-digit UTC year: Kubernetes' RFC 3339 times do, and
// toISOString writes any other year in the extended form (`+010000-…`), which cut to seconds
// gave a malformed time on every page that listed the node.
import { describe, expect, it } from 'vitest';
import { ImportError, parseNodeFile } from '../../src/cluster/nodes/kube-import.js';

const NOW = new Date('2024-05-01T00:00:00Z');
const file = (creationTimestamp: string) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [{ metadata: { name: 'n1', creationTimestamp } }] });

describe('node import: creationTimestamp years', () => {
  it.each(['9999-12-31T23:00:00-05:00', '0000-01-01T00:30:00+01:00'])('refuses %s, whose UTC year has five digits or is negative', (time) => {
    let message = '';
    try {
      parseNodeFile(file(time), NOW);
    } catch (error) {
      expect(error).toBeInstanceOf(ImportError);
      message = (error as Error).message;
    }
    expect(message).toMatch(/creationTimestamp.*0000 and 9999/);
  });

  it('keeps the last second of year 9999 in Kubernetes form', () => {
    const [node] = parseNodeFile(file('9999-12-31T18:59:59-05:00'), NOW);
    expect(JSON.parse(node?.json ?? '{}').metadata.creationTimestamp).toBe('9999-12-31T23:59:59Z');
  });
});
