import type { Db } from 'mongodb';
import { Errors } from '../../infra/errors.js';
import { createResourcePermissionService, type MemberProfiles } from '../permissions/resource-permission.service.js';
import { APP_FOLDER_TYPES } from './apps.schema.js';

/**
 * The one configuration of app permissions (folder types, errors); other modules use it too
 * (identity's app-bound keys). A service that writes must pass `onChange` (the app list's stamp).
 */
export function createAppPermissionService(db: Db, deps: { memberProfiles: MemberProfiles; onChange?: (teamId: string) => Promise<void> }) {
  return createResourcePermissionService(db, {
    collection: 'apps',
    resourceType: 'app',
    folderTypes: APP_FOLDER_TYPES,
    errors: { notFound: Errors.appUnExist, forbidden: Errors.unAuthApp },
    label: 'App',
    ...deps,
  });
}
