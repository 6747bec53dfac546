import { describe, expect, it } from 'vitest';
import {
  ancestorsOf,
  hasPermission,
  isAssignablePermission,
  makePermission,
  makeTeamPermission,
  type PermissionResource,
  PermissionValue,
  resolvePermission,
  wouldCreateCycle,
} from '../../src/domain/permission.js';

const folder = (id: string, over: Partial<PermissionResource> = {}): PermissionResource => ({
  id,
  parentId: null,
  isFolder: true,
  inheritPermission: true,
  defaultPermission: 0,
  ownerTmbId: 'owner',
  ...over,
});

describe('permission values', () => {
  it.each([
    [0, { hasReadPer: false, hasWritePer: false, hasManagePer: false }],
    [4, { hasReadPer: true, hasWritePer: false, hasManagePer: false }],
    [6, { hasReadPer: true, hasWritePer: true, hasManagePer: false }],
    [7, { hasReadPer: true, hasWritePer: true, hasManagePer: true }],
    [2, { hasReadPer: false, hasWritePer: false, hasManagePer: false }],
    [0xffffffff, { hasReadPer: true, hasWritePer: true, hasManagePer: true }],
  ])('value %i has flags %o', (value, flags) => {
    expect(makePermission(value)).toMatchObject({ value, isOwner: false, ...flags });
  });

  it('serialises in the reference field order and gives owners all bits', () => {
    const p = makePermission(4, true);
    expect(Object.keys(p)).toEqual(['value', 'isOwner', 'hasManagePer', 'hasWritePer', 'hasReadPer']);
    expect(p).toEqual({ value: 4294967295, isOwner: true, hasManagePer: true, hasWritePer: true, hasReadPer: true });
  });

  it('team permission falls back to read for a falsy value', () => {
    expect(makeTeamPermission(0, false).value).toBe(4);
    expect(makeTeamPermission(6, false).value).toBe(6);
    expect(makeTeamPermission(4, true).value).toBe(PermissionValue.owner);
  });

  it.each([
    [4, 'read', true],
    [4, 'write', false],
    [6, 'write', true],
    [6, 'manage', false],
    [7, 'manage', true],
    [7, 'owner', false],
    [0xffffffff, 'owner', true],
    [0, 'read', false],
  ] as const)('value %i satisfies %s: %s', (value, required, expected) => {
    expect(hasPermission(makePermission(value), required)).toBe(expected);
  });

  it('only 0, 4, 6, 7 are assignable', () => {
    expect([0, 4, 6, 7].every(isAssignablePermission)).toBe(true);
    expect([1, 5, 8, 0xffffffff].some(isAssignablePermission)).toBe(false);
  });
});

describe('resolvePermission', () => {
  const caller = { tmbId: 'alice', isTeamOwner: false, isRoot: false };
  const parent = folder('f', { defaultPermission: 4 });
  const plain: PermissionResource = { id: 'a', parentId: 'f', isFolder: false, inheritPermission: true, defaultPermission: 0, ownerTmbId: 'alice' };

  it('uses the own row over the default', () => {
    const r = resolvePermission(folder('x', { defaultPermission: 4 }), null, caller, (id) => (id === 'x' ? 6 : undefined), 'write');
    expect(r).toMatchObject({ granted: true, permission: { value: 6 } });
  });

  it('falls back to the default permission', () => {
    const r = resolvePermission(folder('x', { defaultPermission: 4 }), null, caller, () => undefined, 'write');
    expect(r.granted).toBe(false);
    expect(r.permission.value).toBe(4);
  });

  it('a plain resource in a folder follows the parent live and reports its default', () => {
    const bob = { ...caller, tmbId: 'bob' };
    const r = resolvePermission({ ...plain, ownerTmbId: 'carol' }, parent, bob, (id) => (id === 'f' ? 7 : undefined), 'manage');
    expect(r).toMatchObject({ granted: true, defaultPermission: 4, permission: { value: 7, isOwner: false } });
  });

  it('refuses an inheriting resource when the parent refuses, even to its owner', () => {
    const r = resolvePermission(plain, folder('f'), caller, () => undefined, 'read');
    expect(r).toMatchObject({ granted: false, refusedAt: 'f' });
  });

  it('the folder owner owns inheriting children', () => {
    const r = resolvePermission({ ...plain, ownerTmbId: 'carol' }, folder('f', { ownerTmbId: 'alice' }), caller, () => undefined, 'owner');
    expect(r.granted).toBe(true);
    expect(r.permission.value).toBe(PermissionValue.owner);
  });

  it('a resource that broke inheritance uses its own rows', () => {
    const r = resolvePermission({ ...plain, inheritPermission: false, ownerTmbId: 'z' }, parent, caller, () => undefined, 'read');
    expect(r.granted).toBe(false);
  });

  it('team owner and root own everything', () => {
    expect(resolvePermission(folder('x'), null, { ...caller, isTeamOwner: true }, () => undefined, 'owner').granted).toBe(true);
    expect(resolvePermission(folder('x'), null, { ...caller, isRoot: true }, () => undefined, 'owner').granted).toBe(true);
  });
});

describe('tree helpers', () => {
  const parents: Record<string, string | null> = { a: null, b: 'a', c: 'b', d: 'c', x: null };
  const parentOf = (id: string) => parents[id];
  it('lists ancestors nearest first', () => {
    expect(ancestorsOf('d', parentOf)).toEqual(['c', 'b', 'a']);
  });
  it.each([
    ['a', 'd', true],
    ['a', 'a', true],
    ['b', 'c', true],
    ['c', 'a', false],
    ['d', 'x', false],
    ['a', null, false],
  ] as const)('moving %s under %s makes a cycle: %s', (id, target, expected) => {
    expect(wouldCreateCycle(id, target, parentOf)).toBe(expected);
  });
  it('stops on a corrupt loop', () => {
    const loop: Record<string, string> = { p: 'q', q: 'p' };
    expect(ancestorsOf('p', (id) => loop[id])).toEqual(['q']);
  });
});
