import type { Db } from 'mongodb';
import { Errors } from '../../infra/errors.js';
import { createResourcePermissionService } from '../permissions/resource-permission.service.js';
import { APP_FOLDER_TYPES } from './apps.schema.js';

/** The one configuration of app permissions (folder types, errors); other modules use it too. */
export function createAppPermissionService(db: Db) {
  return createResourcePermissionService(db, {
    collection: 'apps',
    resourceType: 'app',
    folderTypes: APP_FOLDER_TYPES,
    errors: { notFound: Errors.appUnExist, forbidden: Errors.unAuthApp },
    label: 'App',
  });
}
