import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { CHAT_INDEXES } from './chat.repo.js';
import { type ChatModule, createChatModule } from './chat-module.js';
import { registerCompletionRoutes } from './completions.routes.js';
import { registerHistoryRoutes } from './history.routes.js';
import { registerInputGuideRoutes } from './input-guide.routes.js';
import { createTeamSpaceResolver, type TeamSpaceResolver } from './team-space.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Chat records, the workflow runtime and the team-space credential. */
    chat: ChatModule & { teamSpace: TeamSpaceResolver };
  }
}

/** The chat module's services, decorated on the root instance as `app.chat`. */
export const chatServices = fp(
  async function chatServices(app: FastifyInstance): Promise<void> {
    const chat = createChatModule(app);
    const teamSpace = createTeamSpaceResolver(chat, {
      authUrl: app.config.TEAM_TOKEN_AUTH_URL,
      findOwnerTmbId: async (teamId) => (await app.identity.teams.findOwnerMember(teamId))?._id ?? null,
    });
    app.platformAuth.registerResolver('teamSpace', teamSpace.resolver);
    app.apps.onAppsDeleted((teamId, appIds) => chat.repo.deleteByApps(teamId, appIds));
    app.decorate('chat', { ...chat, teamSpace });
    app.startup.add('indexes: chat', () => app.mongo.ensureIndexes(CHAT_INDEXES));
    app.startup.add('chat: owner fields of older chat files', () => chat.repo.addMissingFileOwners());
  },
  { name: 'platform-chat', dependencies: ['platform-identity', 'platform-system', 'platform-apps', 'platform-outlinks', 'platform-datasets'] },
);

/** Chat completions, histories, records and the input guide, under /api. */
export async function chatRoutes(api: FastifyInstance): Promise<void> {
  registerCompletionRoutes(api, api.chat);
  registerHistoryRoutes(api, api.chat);
  registerInputGuideRoutes(api, api.chat);
}
