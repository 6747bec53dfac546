import type { FastifyInstance } from 'fastify';
import { definePlatformRoute } from '../../define-route.js';
import type { DatasetsContext } from '../context.js';
import {
  createDatasetSchema,
  createFolderSchema,
  datasetIdSchema,
  idSchema,
  listDatasetsSchema,
  pathsSchema,
  updateDatasetSchema,
} from './dataset.schema.js';
import { createDatasetService } from './dataset.service.js';

const tags = ['Datasets'];
const USER = ['session', 'apiKey'] as const;

/** Datasets and dataset folders. Methods: the documented one first, then the reference client's. */
export function registerDatasetRoutes(app: FastifyInstance, ctx: DatasetsContext): void {
  const service = createDatasetService(ctx);

  definePlatformRoute(app, {
    methods: ['POST'],
    url: '/core/dataset/create',
    auth: USER,
    input: createDatasetSchema,
    summary: 'Create a dataset; returns its id',
    tags,
    handler: ({ input, auth }) => service.create(auth, input),
  });
  definePlatformRoute(app, {
    methods: ['POST'],
    url: '/core/dataset/folder/create',
    auth: USER,
    input: createFolderSchema,
    summary: 'Create a dataset folder',
    tags,
    handler: async ({ input, auth }) => {
      await service.create(auth, input, true);
      return {};
    },
  });
  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/core/dataset/list',
    auth: USER,
    input: listDatasetsSchema,
    summary: 'List datasets of a folder (or search the team by name/intro)',
    tags,
    handler: ({ input, auth }) => service.list(auth, input),
  });
  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/dataset/allDataset',
    auth: USER,
    summary: 'Every dataset the caller can read',
    tags,
    handler: ({ auth }) => service.allDatasets(auth),
  });
  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/dataset/detail',
    auth: USER,
    input: idSchema,
    summary: 'Dataset detail with permission and model objects',
    tags,
    handler: ({ input, auth }) => service.detail(auth, input.id),
  });
  definePlatformRoute(app, {
    methods: ['GET', 'PUT', 'POST'],
    url: '/core/dataset/update',
    auth: USER,
    input: updateDatasetSchema,
    summary: 'Update a dataset (fields, default permission, move)',
    tags,
    handler: ({ input, auth }) => service.update(auth, input),
  });
  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/dataset/paths',
    auth: USER,
    input: pathsSchema,
    summary: 'Breadcrumb from the root to a folder',
    tags,
    handler: ({ input, auth }) => service.paths(auth, input.parentId),
  });
  definePlatformRoute(app, {
    methods: ['GET', 'POST', 'PUT'],
    url: '/core/dataset/resumeInheritPermission',
    auth: USER,
    input: datasetIdSchema,
    summary: 'Make a dataset inherit its folder permission again',
    tags,
    handler: ({ input, auth }) => service.resumeInheritPermission(auth, input.datasetId),
  });
  definePlatformRoute(app, {
    methods: ['GET', 'DELETE', 'POST'],
    url: '/core/dataset/delete',
    auth: USER,
    input: idSchema,
    summary: 'Delete a dataset and its descendants with all their content',
    tags,
    handler: ({ input, auth }) => service.remove(auth, input.id),
  });
}
