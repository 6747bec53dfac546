import { describe, expect, it } from 'vitest';
import { type FolderNode, folderBreadcrumb } from '../../src/domain/folder-breadcrumb.js';

/** A tree as `id: [name, parentId]`; ids missing from it are not found. */
function tree(nodes: Record<string, [string, string | null]>) {
  const lookups: string[] = [];
  const find = async (id: string): Promise<FolderNode | null> => {
    lookups.push(id);
    const node = nodes[id];
    return node ? { _id: id, name: node[0], parentId: node[1] } : null;
  };
  const node = (id: string): FolderNode => ({ _id: id, name: nodes[id]?.[0] ?? '', parentId: nodes[id]?.[1] ?? null });
  return { find, node, lookups };
}

const names = (steps: { parentId: string; parentName: string }[]) => steps.map((step) => `${step.parentId}:${step.parentName}`);

describe('folderBreadcrumb', () => {
  it.each<[string, Record<string, [string, string | null]>, string, string[]]>([
    ['a top-level folder', { a: ['A', null] }, 'a', ['a:A']],
    ['three levels, top first', { a: ['A', null], b: ['B', 'a'], c: ['C', 'b'] }, 'c', ['a:A', 'b:B', 'c:C']],
    ['a missing parent ends the walk', { b: ['B', 'gone'], c: ['C', 'b'] }, 'c', ['b:B', 'c:C']],
    ['a cycle ends the walk', { a: ['A', 'c'], b: ['B', 'a'], c: ['C', 'b'] }, 'c', ['a:A', 'b:B', 'c:C']],
    ['a folder that is its own parent', { a: ['A', 'a'] }, 'a', ['a:A']],
    ['an empty parent id is the top', { a: ['A', ''] }, 'a', ['a:A']],
  ])('%s', async (_name, nodes, start, expected) => {
    const { find, node } = tree(nodes);
    expect(names(await folderBreadcrumb(node(start), find))).toEqual(expected);
  });

  it('stops after the depth bound, keeping the steps nearest the start', async () => {
    const nodes: Record<string, [string, string | null]> = {};
    for (let depth = 0; depth < 10; depth++) nodes[`f${depth}`] = [`F${depth}`, depth === 0 ? null : `f${depth - 1}`];
    const { find, node, lookups } = tree(nodes);
    expect(names(await folderBreadcrumb(node('f9'), find, 4))).toEqual(['f6:F6', 'f7:F7', 'f8:F8', 'f9:F9']);
    expect(lookups).toEqual(['f8', 'f7', 'f6']);
  });

  it('asks for each parent once and never for the start', async () => {
    const { find, node, lookups } = tree({ a: ['A', null], b: ['B', 'a'], c: ['C', 'b'] });
    await folderBreadcrumb(node('c'), find);
    expect(lookups).toEqual(['b', 'a']);
  });
});
