export { default as systemServices } from './models.plugin.js';
export { systemRoutes } from './system.routes.js';
