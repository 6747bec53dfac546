/**
 * Permission inheritance transitions (the spec's "States and transitions" table and the
 * reference's inheritance helpers). Each function returns the writes that must happen, in the
 * order they must happen; repositories apply them. Folders hold materialised copies of their
 * parent's default permission and collaborators, the parent's owner kept as manage
 * (`copiedRows`); plain resources follow their parent live until a change copies it.
 */
import { type PermissionResource, PermissionValue } from './permission.js';

export interface Collaborator {
  tmbId: string;
  permission: number;
}

/** The part of a team's resource tree the rules look at. */
export interface TreeNode {
  id: string;
  parentId: string | null;
  isFolder: boolean;
  inheritPermission: boolean;
  /** Its owner (tmbId); unknown means no owner's rights to keep when copying into it. */
  ownerTmbId?: string;
}

export type InheritanceWrite =
  /** Delete every collaborator row of each resource, then insert `collaborators` on each. */
  | { kind: 'replaceCollaborators'; resourceIds: string[]; collaborators: Collaborator[] }
  /** Insert or update single rows (leaves other rows alone). */
  | { kind: 'upsertCollaborators'; resourceId: string; collaborators: Collaborator[] }
  | { kind: 'removeCollaborators'; resourceId: string; tmbIds: string[] }
  | { kind: 'setDefaultPermission'; resourceIds: string[]; defaultPermission: number }
  /** Fields of the resource itself; always the last write so a crash midway leaves it as it was. */
  | { kind: 'updateResource'; resourceId: string; set: { defaultPermission?: number; inheritPermission?: boolean; parentId?: string | null } };

/** The side of the parent the rules need: its stored default, its collaborator rows and its owner. */
export interface ParentPermissions {
  id: string;
  defaultPermission: number;
  collaborators: Collaborator[];
  /** Owns the parent without a row (ownership is `tmbId`); unknown: nothing to keep. */
  ownerTmbId?: string;
}

/**
 * The rows a child copies from a parent: the parent's rows plus its owner with manage. The
 * owner's rights come from `tmbId`, not a row, and a copy stops the child following the parent,
 * so without the row the parent's owner would be shut out of the child. A row cannot hold the
 * owner value; the child's own owner needs no row.
 */
export function copiedRows(collaborators: readonly Collaborator[], parentOwner: string | undefined, childOwner: string | undefined): Collaborator[] {
  if (parentOwner === undefined || parentOwner === childOwner) return [...collaborators];
  const out = collaborators.filter((c) => c.tmbId !== parentOwner);
  out.push({ tmbId: parentOwner, permission: PermissionValue.manage });
  return out;
}

/**
 * Replaces the rows of `rootId` with `rootRows` and of each inheriting descendant folder with
 * its parent's copy (`copiedRows`, so each level keeps its parent folder's owner). One write per
 * distinct list.
 */
function copyDown(rootId: string, rootOwner: string | undefined, rootRows: readonly Collaborator[], tree: readonly TreeNode[], includeRoot: boolean): InheritanceWrite[] {
  const nodes = new Map(tree.map((n) => [n.id, n]));
  const rowsOf = new Map<string, Collaborator[]>([[rootId, [...rootRows]]]);
  const ownerOf = (id: string) => (id === rootId ? rootOwner : nodes.get(id)?.ownerTmbId);
  const groups = new Map<string, { resourceIds: string[]; collaborators: Collaborator[] }>();
  const add = (id: string, collaborators: Collaborator[]) => {
    const key = JSON.stringify(collaborators.map((c) => [c.tmbId, c.permission]).sort());
    const group = groups.get(key) ?? { resourceIds: [], collaborators };
    group.resourceIds.push(id);
    groups.set(key, group);
  };
  if (includeRoot) add(rootId, [...rootRows]);
  // Breadth-first: a folder's parent is always done before it.
  for (const id of inheritingFolderDescendants(rootId, tree)) {
    const parentId = nodes.get(id)?.parentId as string;
    const collaborators = copiedRows(rowsOf.get(parentId) ?? [], ownerOf(parentId), ownerOf(id));
    rowsOf.set(id, collaborators);
    add(id, collaborators);
  }
  return [...groups.values()].map((g) => ({ kind: 'replaceCollaborators', resourceIds: g.resourceIds, collaborators: g.collaborators }));
}

/** Breadth-first walk of `parentId` links below `rootId` over the given nodes (loop-safe). */
function descendantsWithin(rootId: string, nodes: readonly Pick<TreeNode, 'id' | 'parentId'>[]): string[] {
  const childrenOf = new Map<string, string[]>();
  for (const node of nodes) {
    if (node.parentId === null || node.id === rootId) continue;
    const list = childrenOf.get(node.parentId) ?? [];
    list.push(node.id);
    childrenOf.set(node.parentId, list);
  }
  const out: string[] = [];
  const seen = new Set([rootId]);
  const queue = [rootId];
  // An index into the queue, not shift(): shifting a long array moves it, quadratic in a big tree.
  for (let next = 0; next < queue.length; next++) {
    const current = queue[next] as string;
    for (const child of childrenOf.get(current) ?? []) {
      if (seen.has(child)) continue;
      seen.add(child);
      out.push(child);
      queue.push(child);
    }
  }
  return out;
}

/**
 * Folders below `rootId` that inherit, reachable only through inheriting folders (a folder that
 * broke inheritance shields its whole subtree). Plain resources are never included.
 */
export function inheritingFolderDescendants(rootId: string, tree: readonly TreeNode[]): string[] {
  return descendantsWithin(
    rootId,
    tree.filter((node) => node.isFolder && node.inheritPermission),
  );
}

/** Every resource below `rootId` (any type), for cascades. */
export function allDescendants(rootId: string, tree: readonly Pick<TreeNode, 'id' | 'parentId'>[]): string[] {
  return descendantsWithin(rootId, tree);
}

/**
 * What a new resource starts with. Folders created inside a folder copy its permissions, its
 * owner kept (`copiedRows`); `ownerTmbId` is the new folder's owner when known.
 */
export function initialPermissions(isFolder: boolean, parent: ParentPermissions | null, ownerTmbId?: string): { defaultPermission: number; collaborators: Collaborator[] } {
  if (isFolder && parent) return { defaultPermission: parent.defaultPermission, collaborators: copiedRows(parent.collaborators, parent.ownerTmbId, ownerTmbId) };
  return { defaultPermission: 0, collaborators: [] };
}

/**
 * Default-permission change (rows 1–4 of the table). `currentDefault` is the resolved one (the
 * parent's for a resource inheriting live); an unchanged value writes nothing.
 */
export function changeDefaultPermission(input: {
  resource: PermissionResource;
  currentDefault: number;
  newDefault: number;
  parent: ParentPermissions | null;
  tree: readonly TreeNode[];
}): InheritanceWrite[] {
  const { resource, newDefault } = input;
  if (newDefault === input.currentDefault) return [];
  const writes: InheritanceWrite[] = [];
  if (resource.isFolder) {
    const children = inheritingFolderDescendants(resource.id, input.tree);
    if (children.length > 0) writes.push({ kind: 'setDefaultPermission', resourceIds: children, defaultPermission: newDefault });
  } else if (resource.inheritPermission && resource.parentId !== null) {
    // What it used to inherit becomes its own, so collaborators keep their access.
    const parent = input.parent;
    writes.push({ kind: 'replaceCollaborators', resourceIds: [resource.id], collaborators: parent ? copiedRows(parent.collaborators, parent.ownerTmbId, resource.ownerTmbId) : [] });
  }
  const set: { defaultPermission: number; inheritPermission?: boolean } = { defaultPermission: newDefault };
  if (resource.parentId !== null) set.inheritPermission = false;
  writes.push({ kind: 'updateResource', resourceId: resource.id, set });
  return writes;
}

/**
 * Move (rows 5–7). `target` is the new parent, null for the root. An inheriting folder takes the
 * new parent's default and collaborators and passes them down; everything else only moves.
 */
export function move(input: { resource: PermissionResource; target: ParentPermissions | null; tree: readonly TreeNode[] }): InheritanceWrite[] {
  const { resource, target } = input;
  const parentId = target ? target.id : null;
  if (!(resource.isFolder && resource.inheritPermission)) {
    return [{ kind: 'updateResource', resourceId: resource.id, set: { parentId } }];
  }
  const defaultPermission = target ? target.defaultPermission : 0;
  const collaborators = target ? copiedRows(target.collaborators, target.ownerTmbId, resource.ownerTmbId) : [];
  const children = inheritingFolderDescendants(resource.id, input.tree);
  const writes: InheritanceWrite[] = copyDown(resource.id, resource.ownerTmbId, collaborators, input.tree, true);
  if (children.length > 0) writes.push({ kind: 'setDefaultPermission', resourceIds: children, defaultPermission });
  writes.push({ kind: 'updateResource', resourceId: resource.id, set: { parentId, defaultPermission } });
  return writes;
}

/**
 * resumeInheritPermission (row 8). At the root only the flag changes. In a folder the resource
 * takes the parent's default; a folder copies the parent's collaborators down its inheriting
 * subtree, a plain resource drops its own rows and follows the parent live again.
 */
export function resumeInheritance(input: { resource: PermissionResource; parent: ParentPermissions | null; tree: readonly TreeNode[] }): InheritanceWrite[] {
  const { resource, parent } = input;
  if (resource.parentId === null) return [{ kind: 'updateResource', resourceId: resource.id, set: { inheritPermission: true } }];
  const defaultPermission = parent ? parent.defaultPermission : 0;
  const collaborators = parent ? copiedRows(parent.collaborators, parent.ownerTmbId, resource.ownerTmbId) : [];
  const writes: InheritanceWrite[] = [];
  if (resource.isFolder) {
    const children = inheritingFolderDescendants(resource.id, input.tree);
    writes.push(...copyDown(resource.id, resource.ownerTmbId, collaborators, input.tree, true));
    if (children.length > 0) writes.push({ kind: 'setDefaultPermission', resourceIds: children, defaultPermission });
  } else {
    writes.push({ kind: 'replaceCollaborators', resourceIds: [resource.id], collaborators: [] });
  }
  writes.push({ kind: 'updateResource', resourceId: resource.id, set: { inheritPermission: true, defaultPermission } });
  return writes;
}

function applyChange(base: readonly Collaborator[], upserts: readonly Collaborator[], removals: readonly string[]): Collaborator[] {
  const byMember = new Map(base.map((c) => [c.tmbId, c.permission]));
  for (const tmbId of removals) byMember.delete(tmbId);
  for (const c of upserts) byMember.set(c.tmbId, c.permission);
  return [...byMember].map(([tmbId, permission]) => ({ tmbId, permission }));
}

/**
 * Collaborator edit (update or delete). Editing an inheriting resource breaks its inheritance
 * first: a plain resource materialises the parent's default and collaborators it followed live.
 * A folder's resulting list is copied down to its inheriting descendant folders.
 */
export function changeCollaborators(input: {
  resource: PermissionResource;
  /** The resource's own rows. */
  own: readonly Collaborator[];
  parent: ParentPermissions | null;
  upserts?: readonly Collaborator[];
  removals?: readonly string[];
  tree: readonly TreeNode[];
}): InheritanceWrite[] {
  const { resource, parent } = input;
  const upserts = input.upserts ?? [];
  const removals = input.removals ?? [];
  const breaking = resource.inheritPermission && resource.parentId !== null;
  const livePlain = breaking && !resource.isFolder;
  const base = livePlain ? effectiveParentRows(resource, parent) : input.own;
  const result = applyChange(base, upserts, removals);
  const writes: InheritanceWrite[] = [];
  if (breaking || resource.isFolder) {
    const below = resource.isFolder ? copyDown(resource.id, resource.ownerTmbId, result, input.tree, false) : [];
    if (breaking) writes.push({ kind: 'replaceCollaborators', resourceIds: [resource.id], collaborators: result }, ...below);
    else {
      if (removals.length > 0) writes.push({ kind: 'removeCollaborators', resourceId: resource.id, tmbIds: [...removals] });
      if (upserts.length > 0) writes.push({ kind: 'upsertCollaborators', resourceId: resource.id, collaborators: [...upserts] });
      writes.push(...below);
    }
  } else {
    if (removals.length > 0) writes.push({ kind: 'removeCollaborators', resourceId: resource.id, tmbIds: [...removals] });
    if (upserts.length > 0) writes.push({ kind: 'upsertCollaborators', resourceId: resource.id, collaborators: [...upserts] });
  }
  if (breaking) {
    const set: { inheritPermission: boolean; defaultPermission?: number } = { inheritPermission: false };
    if (livePlain) set.defaultPermission = parent ? parent.defaultPermission : resource.defaultPermission;
    writes.push({ kind: 'updateResource', resourceId: resource.id, set });
  }
  return writes;
}

/**
 * The rows that grant what a plain resource following `parent` live gives each member: the
 * parent's rows and its owner as manage (what a copy would hold). For the "only the owner may
 * change a manager" check and for materialising.
 */
export function effectiveParentRows(resource: Pick<PermissionResource, 'ownerTmbId'>, parent: ParentPermissions | null): Collaborator[] {
  return parent ? copiedRows(parent.collaborators, parent.ownerTmbId, resource.ownerTmbId) : [];
}

/**
 * Members whose own row on the resource grants manage and who would hold less after
 * `resumeInheritance` (the parent's row, owner or default decides then). Resuming replaces the
 * rows, so it must not let a mere manager drop a co-manager the collaborator routes protect.
 */
export function managersLostByResume(input: { resource: PermissionResource; own: readonly Collaborator[]; parent: ParentPermissions | null }): string[] {
  const { resource, parent } = input;
  if (resource.parentId === null) return [];
  const after = new Map(effectiveParentRows(resource, parent).map((c) => [c.tmbId, c.permission]));
  const fallback = parent ? parent.defaultPermission : 0;
  return input.own
    .filter((c) => c.permission === PermissionValue.manage && c.tmbId !== resource.ownerTmbId)
    .filter((c) => (after.get(c.tmbId) ?? fallback) !== PermissionValue.manage)
    .map((c) => c.tmbId);
}
