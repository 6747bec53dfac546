import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

type StartupTask = () => Promise<void>;

declare module 'fastify' {
  interface FastifyInstance {
    /** Work to do once the app is ready (indexes, seed data, workers), in registration order. */
    startup: { add(name: string, task: StartupTask): void };
  }
}

export interface StartupPluginOptions {
  /** False builds the routes only (OpenAPI generation): no database work at all. */
  enabled: boolean;
}

export default fp<StartupPluginOptions>(
  async function startupPlugin(app: FastifyInstance, options) {
    const tasks: { name: string; task: StartupTask }[] = [];
    app.decorate('startup', { add: (name: string, task: StartupTask) => void tasks.push({ name, task }) });
    app.addHook('onReady', async () => {
      if (!options.enabled) return;
      for (const { name, task } of tasks) {
        try {
          await task();
        } catch (error) {
          throw new Error(`start-up task '${name}' failed: ${(error as Error).message}`, { cause: error });
        }
      }
    });
  },
  { name: 'startup' },
);
