import type { TeamRole } from '../auth/types.js';

/** Team permission bits as the reference: read 4, write 6, manage 7, owner all bits. */
export const TeamPermission = { read: 4, write: 6, manage: 7, owner: 0xffffffff } as const;

/**
 * A member's team permission: owners (and root) hold every bit; otherwise the member's own
 * `resource_permissions` team row; otherwise manage for the legacy `admin` role; otherwise the
 * team default (read).
 */
export function resolveTeamPermission(input: { role: TeamRole; isRoot: boolean; row?: number; teamDefault?: number }): number {
  if (input.isRoot || input.role === 'owner') return TeamPermission.owner;
  if (typeof input.row === 'number') return input.row >>> 0;
  if (input.role === 'admin') return TeamPermission.manage;
  return input.teamDefault ? input.teamDefault >>> 0 : TeamPermission.read;
}

/** The reference's check: owner needs every bit; manage passes anything else; else the bits. */
export function teamPermissionAllows(value: number, required: keyof typeof TeamPermission): boolean {
  const v = value >>> 0;
  if (required === 'owner') return v === TeamPermission.owner;
  if ((v & TeamPermission.manage) === TeamPermission.manage) return true;
  const bits = TeamPermission[required];
  return (v & bits) === bits;
}

/** The serialised permission object of the reference's user detail. */
export function serializeTeamPermission(value: number) {
  const v = value >>> 0;
  return {
    value: v,
    isOwner: v === TeamPermission.owner,
    hasManagePer: teamPermissionAllows(v, 'manage'),
    hasWritePer: teamPermissionAllows(v, 'write'),
    hasReadPer: teamPermissionAllows(v, 'read'),
  };
}
