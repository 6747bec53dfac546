import type { Db, MongoClient } from 'mongodb';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { backoffDelay } from '../infra/backoff.js';
import { describeError } from '../infra/database-errors.js';
import { createMongo, dropRetiredIndexes, ensureIndexes, type IndexDeclaration, type Mongo } from '../infra/mongo.js';

declare module 'fastify' {
  interface FastifyInstance {
    mongo: {
      client: MongoClient;
      db: Db;
      ensureIndexes(declarations: readonly IndexDeclaration[]): Promise<void>;
      /**
       * Drops indexes earlier versions created (infra/mongo.ts `dropRetiredIndexes`): call it in a
       * module's index task right after its `ensureIndexes`. Whatever this process built so far is
       * never dropped. Answers the names dropped.
       */
      dropRetiredIndexes(retired: readonly IndexDeclaration[]): Promise<string[]>;
    };
  }
}

export interface MongoPluginOptions {
  uri: string;
  /** How long start-up waits for the database (it may start after this service). */
  connectWaitMs?: number;
}

const CONNECT_WAIT_MS = 30_000;
const CONNECT_RETRY = { firstMs: 500, maxMs: 4000 };

/** One MongoDB client for the process; closed when the app closes. */
export default fp<MongoPluginOptions>(
  async function mongoPlugin(app: FastifyInstance, options) {
    const { client, db } = createMongo(options.uri);
    // Connecting first makes a wrong URI fail start-up instead of the first request. Each
    // attempt fails within a second (fail-fast client), so start-up retries for a while: in a
    // compose file or a cluster the database often comes up after this service.
    app.startup.add('connect to MongoDB', async () => {
      const deadline = Date.now() + (options.connectWaitMs ?? CONNECT_WAIT_MS);
      for (let attempt = 1; ; attempt++) {
        try {
          await client.connect();
          return;
        } catch (error) {
          if (Date.now() >= deadline) throw error;
          app.log.warn(`database not reachable yet (attempt ${attempt}): ${describeError(error)}`);
          await new Promise((resolve) => setTimeout(resolve, backoffDelay(attempt, CONNECT_RETRY)));
        }
      }
    });
    // Index builds go through a client of their own without the socket timeout: a new index on a
    // large collection can take longer than the two minutes any other command may, and start-up
    // then failed on MongoDB, restarting until the server finished the build. Opened on the first
    // build, closed once start-up is over (onReady hooks run after the startup plugin's tasks).
    let builder: Mongo | undefined;
    const closeBuilder = async () => {
      const open = builder;
      builder = undefined;
      await open?.client.close();
    };
    const builderDb = () => {
      builder ??= createMongo(options.uri, { socketTimeoutMS: 0 });
      return builder.db;
    };
    const built: IndexDeclaration[] = [];
    const buildIndexes = async (declarations: readonly IndexDeclaration[]) => {
      built.push(...declarations);
      await ensureIndexes(builderDb(), declarations, app.log);
    };
    // Through the same client: a drop may wait behind another replica's build on the collection.
    const dropRetired = (retired: readonly IndexDeclaration[]) => dropRetiredIndexes(builderDb(), { retired, current: built }, app.log);
    app.decorate('mongo', { client, db, ensureIndexes: buildIndexes, dropRetiredIndexes: dropRetired });
    app.addHook('onReady', closeBuilder);
    app.addHook('onClose', async () => {
      await closeBuilder();
      await client.close();
    });
  },
  { name: 'mongo', dependencies: ['startup'] },
);
