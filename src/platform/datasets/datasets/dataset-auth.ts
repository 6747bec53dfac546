import type { Db } from 'mongodb';
import type { RequiredPermission, SerializedPermission } from '../../../domain/permission.js';
import { Errors } from '../../../infra/errors.js';
import type { AuthContext } from '../../auth/types.js';
import { createResourcePermissionService, type MemberProfiles } from '../../permissions/resource-permission.service.js';
import type { CollectionRecord, CollectionRepo } from '../collections/collection.repo.js';
import type { DataRecord, DataRepo } from '../data/data.repo.js';
import type { DatasetRecord } from './dataset.repo.js';

export interface AuthorizedDataset {
  dataset: DatasetRecord;
  permission: SerializedPermission;
  /** The default permission shown for the dataset (its folder's while inheriting). */
  defaultPermission: number;
}

/**
 * The one configuration of dataset permissions. A service that writes passes `onChange` (the
 * dataset lists' version stamp): the shared service calls it after each of its writes
 * (collaborator rows, default permission, inheritance, moves, deleted datasets' rows).
 */
export const createDatasetPermissions = (db: Db, deps: { memberProfiles: MemberProfiles; onChange?: (teamId: string) => Promise<void> }) =>
  createResourcePermissionService(db, {
    collection: 'datasets',
    resourceType: 'dataset',
    folderTypes: ['folder'],
    errors: { notFound: Errors.unExistDataset, forbidden: Errors.unAuthDataset },
    label: 'Dataset',
    ...deps,
  });

export type DatasetPermissions = ReturnType<typeof createDatasetPermissions>;

/**
 * Dataset, collection and data authorisation (the reference's authDataset*), through the shared
 * resource-permission service; always scoped by the caller's team.
 */
export function createDatasetAuth(deps: { permissions: DatasetPermissions; collections: CollectionRepo; data: DataRepo }) {
  async function authDataset(auth: AuthContext, datasetId: string | undefined, required: RequiredPermission, field = 'datasetId'): Promise<AuthorizedDataset> {
    if (!datasetId) throw Errors.missingParams(`Missing field '${field}'`);
    const { doc, permission, defaultPermission } = await deps.permissions.authorize<DatasetRecord>(auth, datasetId, required, field);
    return { dataset: doc, permission, defaultPermission };
  }

  async function authCollection(auth: AuthContext, collectionId: string, required: RequiredPermission): Promise<AuthorizedDataset & { collection: CollectionRecord }> {
    const collection = await deps.collections.findForAuth(collectionId);
    if (!collection) throw Errors.collectionNotFound(collectionId);
    const authorized = await authDataset(auth, collection.datasetId, required);
    // The dataset check refused other teams; the collection must also be of the caller's team.
    if (collection.teamId !== auth.teamId) throw Errors.unAuthDataset(`Collection ${collectionId} belongs to another team`);
    return { ...authorized, collection };
  }

  async function authData(auth: AuthContext, dataId: string, required: RequiredPermission) {
    const data: DataRecord | null = await deps.data.findForAuth(dataId);
    if (!data) throw Errors.dataNotFound(dataId);
    const authorized = await authCollection(auth, data.collectionId, required);
    return { ...authorized, data };
  }

  return { authDataset, authCollection, authData };
}

export type DatasetAuth = ReturnType<typeof createDatasetAuth>;
