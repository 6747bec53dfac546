export * from './resource-permission.service.js';
export { RESOURCE_PERMISSION_INDEXES, type ResourceType } from './resource-permissions.repo.js';
export type { ResourceDoc } from './resource-tree.repo.js';
