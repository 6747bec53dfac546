import type { Db } from 'mongodb';
import type { RequiredPermission } from '../../domain/permission.js';
import { createAppPermissionService } from '../apps/app-permissions.js';
import type { AuthContext } from '../auth/types.js';
import type { MemberProfiles } from '../permissions/resource-permission.service.js';
import { createDatasetPermissions } from '../datasets/datasets/dataset-auth.js';

/**
 * App and dataset permission checks for the identity endpoints (app-bound API keys, export
 * limit, training usage), through the shared resource-permission service the apps and
 * datasets modules use, so the rules are the same everywhere.
 */
export function createResourceAccess(db: Db, memberProfiles: MemberProfiles) {
  // Each module declares its permission configuration once; these checks only read.
  const apps = createAppPermissionService(db, { memberProfiles });
  const datasets = createDatasetPermissions(db, { memberProfiles });
  return {
    authApp: (auth: AuthContext, appId: string, required: RequiredPermission, field = 'appId') => apps.authorize(auth, appId, required, field),
    authDataset: (auth: AuthContext, datasetId: string, required: RequiredPermission, field = 'datasetId') =>
      datasets.authorize<Awaited<ReturnType<typeof datasets.authorize>>['doc'] & { vectorModel?: string; agentModel?: string }>(auth, datasetId, required, field),
  };
}

export type ResourceAccess = ReturnType<typeof createResourceAccess>;
