import type { Db } from 'mongodb';
import type { RequiredPermission, SerializedPermission } from '../../../domain/permission.js';
import { Errors, isAppError } from '../../../infra/errors.js';
import type { AuthContext } from '../../auth/types.js';
import { createResourcePermissionService, type MemberProfiles } from '../../permissions/resource-permission.service.js';
import type { CollectionRecord } from '../collections/collection.repo.js';
import type { CollectionCache } from '../collections/collection-cache.js';
import type { DataRecord, DataRepo } from '../data/data.repo.js';
import type { DatasetRecord } from './dataset.repo.js';
import type { DatasetListReadModel } from './dataset-list.read-model.js';

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
 * resource-permission service; always scoped by the caller's team. Warm, a dataset is judged on
 * the team's read model and a collection comes from the collection cache: no database command.
 */
export function createDatasetAuth(deps: { permissions: DatasetPermissions; datasetList: DatasetListReadModel; collections: CollectionCache; data: DataRepo }) {
  async function authDataset(auth: AuthContext, datasetId: string | undefined, required: RequiredPermission, field = 'datasetId'): Promise<AuthorizedDataset> {
    if (!datasetId) throw Errors.missingParams(`Missing field '${field}'`);
    // The read model holds every dataset of the caller's team and the team's permission rows as
    // of the team's stamp, which every write of either bumps: judging there is what `authorize`
    // would answer. Ids it lacks (malformed, missing, another team's, created by a direct write)
    // go to the database, which answers them and their exact error (400, 404, 403).
    const team = await deps.datasetList.team(auth.teamId);
    const { doc, permission, defaultPermission } = await deps.permissions.authorizeIn(team, auth, datasetId, required, field);
    return { dataset: doc, permission, defaultPermission };
  }

  async function authCollection(auth: AuthContext, collectionId: string, required: RequiredPermission): Promise<AuthorizedDataset & { collection: CollectionRecord }> {
    // Reads use the cache. A write into the collection reads it fresh: should a process die
    // between a collection delete and its stamp bump, other processes' kept copy would otherwise
    // accept data for a collection that is gone until the cache's safety net.
    const collection = required === 'read' ? await deps.collections.find(auth.teamId, collectionId) : await deps.collections.fresh(collectionId);
    if (!collection) throw Errors.collectionNotFound(collectionId);
    const authorized = await authDataset(auth, collection.datasetId, required);
    // The dataset check refused other teams; the collection must also be of the caller's team.
    if (collection.teamId !== auth.teamId) throw Errors.unAuthDataset(`Collection ${collectionId} belongs to another team`);
    return { ...authorized, collection };
  }

  /** The data item is read each time: items are many and written by many paths (training, rebuilds, edits). */
  async function authData(auth: AuthContext, dataId: string, required: RequiredPermission) {
    const data: DataRecord | null = await deps.data.findForAuth(dataId);
    if (!data) throw Errors.dataNotFound(dataId);
    const authorized = await authCollection(auth, data.collectionId, required);
    return { ...authorized, data };
  }

  /**
   * Of `ids` (a folder and what lies under it), those the caller holds `required` on, each judged
   * on its own: a dataset under a folder that stopped inheriting is not the folder's to give.
   */
  async function permittedDatasets(auth: AuthContext, ids: readonly string[], required: RequiredPermission): Promise<string[]> {
    const team = await deps.datasetList.team(auth.teamId);
    const permitted: string[] = [];
    for (const id of ids) {
      try {
        await deps.permissions.authorizeIn(team, auth, id, required);
        permitted.push(id);
      } catch (error) {
        if (!isAppError(error)) throw error;
      }
    }
    return permitted;
  }

  return { authDataset, authCollection, authData, permittedDatasets };
}

export type DatasetAuth = ReturnType<typeof createDatasetAuth>;
