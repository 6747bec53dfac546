/**
 * Permission inheritance transitions (the spec's "States and transitions" table and the
 * reference's inheritance helpers). Each function returns the writes that must happen, in the
 * order they must happen; repositories apply them. Folders hold materialised copies of their
 * parent's default permission and collaborators; plain resources follow their parent live.
 */
import type { PermissionResource } from './permission.js';

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

/** The side of the parent the rules need: its stored default and its collaborator rows. */
export interface ParentPermissions {
  id: string;
  defaultPermission: number;
  collaborators: Collaborator[];
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

/** What a new resource starts with. Folders created inside a folder copy its permissions. */
export function initialPermissions(isFolder: boolean, parent: ParentPermissions | null): { defaultPermission: number; collaborators: Collaborator[] } {
  if (isFolder && parent) return { defaultPermission: parent.defaultPermission, collaborators: parent.collaborators };
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
    writes.push({ kind: 'replaceCollaborators', resourceIds: [resource.id], collaborators: input.parent?.collaborators ?? [] });
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
  const collaborators = target ? target.collaborators : [];
  const children = inheritingFolderDescendants(resource.id, input.tree);
  const writes: InheritanceWrite[] = [{ kind: 'replaceCollaborators', resourceIds: [resource.id, ...children], collaborators }];
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
  const collaborators = parent ? parent.collaborators : [];
  const writes: InheritanceWrite[] = [];
  if (resource.isFolder) {
    const children = inheritingFolderDescendants(resource.id, input.tree);
    writes.push({ kind: 'replaceCollaborators', resourceIds: [resource.id, ...children], collaborators });
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
  const base = livePlain ? (parent?.collaborators ?? []) : input.own;
  const result = applyChange(base, upserts, removals);
  const writes: InheritanceWrite[] = [];
  if (breaking || resource.isFolder) {
    const children = resource.isFolder ? inheritingFolderDescendants(resource.id, input.tree) : [];
    if (breaking) writes.push({ kind: 'replaceCollaborators', resourceIds: [resource.id, ...children], collaborators: result });
    else {
      if (removals.length > 0) writes.push({ kind: 'removeCollaborators', resourceId: resource.id, tmbIds: [...removals] });
      if (upserts.length > 0) writes.push({ kind: 'upsertCollaborators', resourceId: resource.id, collaborators: [...upserts] });
      if (children.length > 0) writes.push({ kind: 'replaceCollaborators', resourceIds: children, collaborators: result });
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
