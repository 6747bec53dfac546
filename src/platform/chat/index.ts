import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { startRetryingTask } from '../../infra/backoff.js';
import { isUniqueIndexBuildFailure } from '../../infra/mongo.js';
import { CHAT_INDEXES, RETIRED_CHAT_INDEXES } from './chat.repo.js';
import { giveChatIdsToChatsWithout, removeDuplicateChats, unbuildableChatIndexError } from './chat-dedupe.repo.js';
import { CHAT_FILE_INDEXES } from './chat-files.repo.js';
import { type ChatModule, type ChatServices, chatServicesOf, createChatModule } from './chat-module.js';
import { registerCompletionRoutes } from './completions.routes.js';
import { registerHistoryRoutes } from './history.routes.js';
import { registerInputGuideRoutes } from './input-guide.routes.js';
import { createTeamSpaceResolver } from './team-space.js';

/**
 * The whole module (repositories included) for the module's own routes, under a key no other
 * module can name: `app.chat` holds only what other modules may use.
 */
const chatModule = Symbol('platform-chat module');

declare module 'fastify' {
  interface FastifyInstance {
    /** Chat records and the workflow runtime. */
    chat: ChatServices;
    [chatModule]: ChatModule;
  }
}

/** The chat module's services, decorated on the root instance as `app.chat`. */
export const chatServices = fp(
  async function chatServices(app: FastifyInstance): Promise<void> {
    const chat = createChatModule(app);
    const teamSpace = createTeamSpaceResolver(chat, {
      authUrl: app.config.TEAM_TOKEN_AUTH_URL,
      findOwnerTmbId: (teamId) => app.identity.ownerMemberId(teamId),
    });
    // The `teamSpace` credential kind: teamId + teamToken in the query or body.
    app.platformAuth.registerResolver('teamSpace', teamSpace);
    app.apps.onAppsDeleted((teamId, appIds) => chat.repo.deleteByApps(teamId, appIds));
    // A visitor's chat file is the app's like its chats: one stored after the app went goes with it (404).
    app.datasets.onAppFileStored((teamId, appId) => app.apps.confirmDependentWrite(teamId, appId));
    app.decorate('chat', chatServicesOf(chat));
    app.decorate(chatModule, chat);
    app.startup.add('indexes: chat', async () => {
      const indexes = [...CHAT_INDEXES, ...CHAT_FILE_INDEXES];
      try {
        await app.mongo.ensureIndexes(indexes);
      } catch (error) {
        // A database written before chat ids were unique may hold two documents of one chat, and
        // one written by other tools chats without a chat id (on MongoDB two of one app collide).
        if (!isUniqueIndexBuildFailure(error)) throw error;
        const named = await giveChatIdsToChatsWithout(app.mongo.db);
        const removed = await removeDuplicateChats(app.mongo.db);
        app.log.warn({ named, removed }, 'chats: gave chats without a chat id their own and removed second documents of one chat id before making chat ids unique');
        try {
          await app.mongo.ensureIndexes(indexes);
        } catch (again) {
          // Chats with a chat id of another type or without an ObjectId app id are left as they are.
          throw await unbuildableChatIndexError(app.mongo.db, again);
        }
      }
      await app.mongo.dropRetiredIndexes(RETIRED_CHAT_INDEXES);
    });
    // In the background: on FerretDB it writes about 400 files a second, and until it is done
    // deletes also find files by their metadata, so nothing waits for it.
    let fileOwners: { stop(): Promise<void> } | undefined;
    app.startup.add('chat: owner fields of older chat files', async () => {
      fileOwners = startRetryingTask({
        name: 'adding owner fields to older chat files',
        retry: { firstMs: 1000, maxMs: 60_000 },
        log: app.log,
        onFailure: (error) => app.opsMetrics.databaseError('chat-file-owners', error),
        run: async ({ stopped }) => {
          if (await chat.files.addMissingOwners(stopped)) app.log.debug('chat files: owner fields complete');
        },
      });
    });
    app.addHook('preClose', async () => {
      await fileOwners?.stop();
    });
    // Registered after the database plugin, so it runs before the client closes.
    app.addHook('onClose', () => chat.feedback.flush());
  },
  { name: 'platform-chat', dependencies: ['platform-identity', 'platform-system', 'platform-apps', 'platform-outlinks', 'platform-datasets'] },
);

/** Chat completions, histories, records and the input guide, under /api. */
export async function chatRoutes(api: FastifyInstance): Promise<void> {
  const chat = api[chatModule];
  registerCompletionRoutes(api, chat);
  registerHistoryRoutes(api, chat);
  registerInputGuideRoutes(api, chat);
}
