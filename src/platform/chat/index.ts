import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { registerChannelRoutes } from '../outlinks/channels/channel.routes.js';
import { OUTLINK_INDEXES } from '../outlinks/outlinks.repo.js';
import { registerOutLinkRoutes } from '../outlinks/outlinks.routes.js';
import { registerOpenAiRoutes } from '../openai/openai.routes.js';
import { CHAT_INDEXES } from './chat.repo.js';
import { createChatModule } from './chat-module.js';
import { registerCompletionRoutes } from './completions.routes.js';
import { registerHistoryRoutes } from './history.routes.js';
import { registerInputGuideRoutes } from './input-guide.routes.js';
import { createTeamSpaceResolver } from './team-space.js';
import { USAGE_INDEXES } from './usage.repo.js';

/** Chat, workflow runtime, share links and messaging channels, OpenAI-style endpoints. */
export default fp(
  async function chatModule(app: FastifyInstance) {
    const chat = createChatModule(app);
    app.platformAuth.registerResolver('outLink', chat.outLinks.resolver);
    const teamSpace = createTeamSpaceResolver(chat, {
      authUrl: app.config.TEAM_TOKEN_AUTH_URL,
      findOwnerTmbId: async (teamId) => (await app.identity.teams.findOwnerMember(teamId))?._id.toHexString() ?? null,
    });
    app.platformAuth.registerResolver('teamSpace', teamSpace.resolver);
    app.startup.add('indexes: chat', () => app.mongo.ensureIndexes([...CHAT_INDEXES, ...OUTLINK_INDEXES, ...USAGE_INDEXES]));

    registerCompletionRoutes(app, chat);
    registerHistoryRoutes(app, chat);
    registerInputGuideRoutes(app, chat);
    registerOutLinkRoutes(app, chat.outLinks);
    registerOpenAiRoutes(app, chat, teamSpace.check);
    registerChannelRoutes(app, chat);
  },
  { name: 'platform-chat' },
);
