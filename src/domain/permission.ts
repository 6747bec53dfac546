/**
 * Permission values and their resolution for team-owned resources (apps, datasets, their
 * folders). Bit flags as the reference: read 4, write 6 (includes read), manage 7, owner all bits.
 * Pure: callers load rows and documents, this module only decides.
 */

export const PermissionValue = {
  none: 0,
  read: 0b100,
  write: 0b110,
  manage: 0b111,
  owner: 0xffffffff,
} as const;

export type RequiredPermission = 'read' | 'write' | 'manage' | 'owner';

/** The permission object as the reference serialises it, field order included. */
export interface SerializedPermission {
  value: number;
  isOwner: boolean;
  hasManagePer: boolean;
  hasWritePer: boolean;
  hasReadPer: boolean;
}

/** Builds the serialised permission; an owner always gets the owner value. */
export function makePermission(value: number | null | undefined, isOwner = false): SerializedPermission {
  const v = isOwner ? PermissionValue.owner : (value ?? 0) >>> 0;
  const hasManagePer = (v & PermissionValue.manage) === PermissionValue.manage;
  return {
    value: v,
    isOwner,
    hasManagePer,
    hasWritePer: hasManagePer || (v & PermissionValue.write) === PermissionValue.write,
    hasReadPer: hasManagePer || (v & PermissionValue.read) === PermissionValue.read,
  };
}

/** The team permission: a falsy stored value falls back to read, as the reference's team class does. */
export function makeTeamPermission(value: number | null | undefined, isTeamOwner: boolean): SerializedPermission {
  return makePermission(value ? value : PermissionValue.read, isTeamOwner);
}

/** The reference's checkPer: owner needs the owner value; manage satisfies anything else. */
export function hasPermission(permission: SerializedPermission, required: RequiredPermission): boolean {
  if (required === 'owner') return permission.value === PermissionValue.owner;
  if (permission.hasManagePer) return true;
  const bits = PermissionValue[required];
  return (permission.value & bits) === bits;
}

/** Values a client may assign as a default or collaborator permission. */
export function isAssignablePermission(value: number): boolean {
  return value === PermissionValue.none || value === PermissionValue.read || value === PermissionValue.write || value === PermissionValue.manage;
}

/** A resource as the permission rules see it. */
export interface PermissionResource {
  id: string;
  parentId: string | null;
  /** Folder types (app folders and HTTP-plugin containers, dataset folders) hold materialised copies. */
  isFolder: boolean;
  inheritPermission: boolean;
  defaultPermission: number;
  /** The creating team member, who owns it. */
  ownerTmbId: string;
}

export interface Caller {
  tmbId: string;
  /** Team owner role (owner of everything in the team). */
  isTeamOwner: boolean;
  /** The root user: owner of everything everywhere. */
  isRoot: boolean;
}

/** A plain resource inside a folder follows its parent live, unless inheritance was broken. */
export function inheritsDynamically(resource: PermissionResource): boolean {
  return !resource.isFolder && resource.inheritPermission !== false && resource.parentId !== null;
}

export interface ResolvedPermission {
  permission: SerializedPermission;
  /** The default permission shown for the resource (the parent's while inheriting dynamically). */
  defaultPermission: number;
  /** Id of the resource that failed the requirement, when it is not the resource itself. */
  refusedAt?: string;
}

/**
 * Resolves the caller's permission on `resource` (authApp / authDataset). `parent` must be given
 * when the resource inherits dynamically. `rowOf(resourceId)` returns the caller's own
 * collaborator value or undefined. Following the reference, a requirement is checked on the
 * parent too: an inheriting resource cannot be reached when its folder refuses the caller.
 */
export function resolvePermission(
  resource: PermissionResource,
  parent: PermissionResource | null,
  caller: Caller,
  rowOf: (resourceId: string) => number | undefined,
  required?: RequiredPermission,
): ResolvedPermission & { granted: boolean } {
  if (caller.isRoot) return { permission: makePermission(PermissionValue.owner, true), defaultPermission: resource.defaultPermission, granted: true };
  const isOwner = caller.isTeamOwner || resource.ownerTmbId === caller.tmbId;
  if (inheritsDynamically(resource) && parent) {
    const fromParent = resolvePermission(parent, null, caller, rowOf, required);
    if (!fromParent.granted) return { ...fromParent, refusedAt: parent.id };
    const permission = makePermission(fromParent.permission.value, isOwner);
    return {
      permission,
      defaultPermission: parent.defaultPermission,
      granted: required ? hasPermission(permission, required) : true,
    };
  }
  const permission = makePermission(rowOf(resource.id) ?? resource.defaultPermission, isOwner);
  return {
    permission,
    defaultPermission: resource.defaultPermission,
    granted: required ? hasPermission(permission, required) : true,
  };
}

/** Walks `parentId` links upward; the result is the ancestors of `id`, nearest first. Stops at loops. */
export function ancestorsOf(id: string, parentOf: (id: string) => string | null | undefined): string[] {
  const out: string[] = [];
  const seen = new Set([id]);
  let current = parentOf(id);
  while (current && !seen.has(current)) {
    out.push(current);
    seen.add(current);
    current = parentOf(current);
  }
  return out;
}

/** True when moving `resourceId` under `targetId` would put it inside itself. */
export function wouldCreateCycle(resourceId: string, targetId: string | null, parentOf: (id: string) => string | null | undefined): boolean {
  if (targetId === null) return false;
  if (targetId === resourceId) return true;
  return ancestorsOf(targetId, parentOf).includes(resourceId);
}
