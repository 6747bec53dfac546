import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { ModelRegistry } from '../../domain/models.js';
import { loadModelCatalog } from './model-config.js';
import { createModelRegistry } from './model-registry.js';

declare module 'fastify' {
  interface FastifyInstance {
    models: ModelRegistry;
  }
}

/** `app.models`: the model catalogue, loaded once at registration (a bad file stops start-up). */
export default fp(
  async function modelsPlugin(app: FastifyInstance) {
    app.decorate('models', createModelRegistry(await loadModelCatalog(app.config)));
  },
  { name: 'platform-system' },
);
