import { describe, expect, it } from 'vitest';
import { deepClone } from '../../src/infra/deep-clone.js';
import { deepFreeze } from '../../src/infra/deep-freeze.js';

describe('deepClone', () => {
  it('copies a frozen workflow graph into writable objects that share nothing with it', () => {
    const graph = deepFreeze({
      nodes: [{ nodeId: 'ai', inputs: [{ key: 'history', value: 6 }, { key: 'userChatInput', value: ['start', 'userChatInput'] }], outputs: [{ key: 'answerText', value: null }] }],
      at: new Date('2024-01-02T03:04:05Z'),
      flag: true,
      missing: undefined,
    });
    const copy = deepClone(graph);
    expect(copy).toEqual(graph);
    copy.nodes[0]!.outputs[0]!.value = 'written' as never;
    (copy.nodes[0]!.inputs[1]!.value as string[]).push('more');
    copy.at.setUTCFullYear(2030);
    expect(graph.nodes[0]!.outputs[0]!.value).toBeNull();
    expect(graph.nodes[0]!.inputs[1]!.value).toEqual(['start', 'userChatInput']);
    expect(graph.at.toISOString()).toBe('2024-01-02T03:04:05.000Z');
    expect(Object.isFrozen(copy.nodes[0])).toBe(false);
    expect('missing' in copy).toBe(true);
  });

  it('copies objects without a prototype, and hands other kinds to structuredClone', () => {
    const bare = Object.assign(Object.create(null), { a: { b: 1 } }) as { a: { b: number } };
    const copied = deepClone(bare);
    expect(copied.a).not.toBe(bare.a);
    expect(copied).toEqual({ a: { b: 1 } });
    const map = new Map([['k', { v: 1 }]]);
    const mapCopy = deepClone({ map }).map;
    expect(mapCopy).toBeInstanceOf(Map);
    expect(mapCopy.get('k')).toEqual({ v: 1 });
    expect(mapCopy.get('k')).not.toBe(map.get('k'));
  });
});
