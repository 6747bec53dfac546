import type { Db, MongoClient } from 'mongodb';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { createMongo, ensureIndexes, type IndexDeclaration } from '../infra/mongo.js';

declare module 'fastify' {
  interface FastifyInstance {
    mongo: { client: MongoClient; db: Db; ensureIndexes(declarations: readonly IndexDeclaration[]): Promise<void> };
  }
}

export interface MongoPluginOptions {
  uri: string;
}

/** One MongoDB client for the process; closed when the app closes. */
export default fp<MongoPluginOptions>(
  async function mongoPlugin(app: FastifyInstance, options) {
    const { client, db } = createMongo(options.uri);
    // Connecting first makes a wrong URI fail start-up instead of the first request.
    app.startup.add('connect to MongoDB', async () => {
      await client.connect();
    });
    app.decorate('mongo', { client, db, ensureIndexes: (declarations) => ensureIndexes(db, declarations) });
    app.addHook('onClose', async () => {
      await client.close();
    });
  },
  { name: 'mongo', dependencies: ['startup'] },
);
