import { describe, expect, it } from 'vitest';
import { withNodeLists } from '../../src/domain/workflow/node-lists.js';

describe('withNodeLists', () => {
  it('answers the same array when every node has both lists', () => {
    const nodes = [{ nodeId: 'a', inputs: [], outputs: [] }];
    expect(withNodeLists(nodes)).toBe(nodes);
  });
  it('gives a node without inputs or outputs empty lists, leaving the stored node as it was', () => {
    const stored = { nodeId: 'b', inputs: null as unknown };
    const [node] = withNodeLists([stored]);
    expect(node).toEqual({ nodeId: 'b', inputs: [], outputs: [] });
    expect(stored).toEqual({ nodeId: 'b', inputs: null });
  });
});
