import type { Db } from 'mongodb';
import type { RequiredPermission } from '../../domain/permission.js';
import { Errors } from '../../infra/errors.js';
import type { AuthContext } from '../auth/types.js';
import { createResourcePermissionService } from '../permissions/resource-permission.service.js';

/**
 * App and dataset permission checks for the identity endpoints (app-bound API keys, export
 * limit, training usage), through the shared resource-permission service the apps and
 * datasets modules use, so the rules are the same everywhere.
 */
export function createResourceAccess(db: Db) {
  const apps = createResourcePermissionService(db, {
    collection: 'apps',
    resourceType: 'app',
    folderTypes: ['folder', 'httpPlugin'],
    errors: { notFound: Errors.appUnExist, forbidden: Errors.unAuthApp },
    label: 'App',
  });
  const datasets = createResourcePermissionService(db, {
    collection: 'datasets',
    resourceType: 'dataset',
    folderTypes: ['folder'],
    errors: { notFound: Errors.unExistDataset, forbidden: Errors.unAuthDataset },
    label: 'Dataset',
  });
  return {
    authApp: (auth: AuthContext, appId: string, required: RequiredPermission, field = 'appId') => apps.authorize(auth, appId, required, field),
    authDataset: (auth: AuthContext, datasetId: string, required: RequiredPermission, field = 'datasetId') =>
      datasets.authorize<Awaited<ReturnType<typeof datasets.authorize>>['doc'] & { vectorModel?: string; agentModel?: string }>(auth, datasetId, required, field),
  };
}

export type ResourceAccess = ReturnType<typeof createResourceAccess>;
