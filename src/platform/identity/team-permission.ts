import { hasPermission, makeTeamPermission, PermissionValue, type RequiredPermission } from '../../domain/permission.js';
import type { TeamRole } from '../auth/types.js';

/** Team permission bits as the reference: read 4, write 6, manage 7, owner all bits (the domain's values). */
export const TeamPermission = { read: PermissionValue.read, write: PermissionValue.write, manage: PermissionValue.manage, owner: PermissionValue.owner } as const;

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

/** The serialised team permission: the domain's one rule (owner needs every bit; manage passes anything else). */
export function serializeTeamPermission(value: number) {
  return makeTeamPermission(value, value >>> 0 === TeamPermission.owner);
}

/** Whether a team permission value allows `required` (the same rule as every resource check). */
export function teamPermissionAllows(value: number, required: RequiredPermission): boolean {
  return hasPermission(serializeTeamPermission(value), required);
}
