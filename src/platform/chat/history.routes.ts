/** core/chat/* history, init and feedback routes. */
import type { FastifyInstance } from 'fastify';
import { definePlatformRoute } from '../define-route.js';
import { outLinkInitSchema } from '../outlinks/outlinks.schema.js';
import {
  adminFeedbackSchema,
  chatRefSchema,
  clearHistoriesSchema,
  closeCustomSchema,
  feedbackSchema,
  historiesResponse,
  historiesSchema,
  initSchema,
  itemDeleteSchema,
  resDataSchema,
  teamInitSchema,
  updateHistorySchema,
} from './chat.schema.js';
import type { ChatModule } from './chat-module.js';
import { createHistoryService } from './history.service.js';

const CHAT_KINDS = ['outLink', 'teamSpace', 'apiKey', 'session'] as const;

export function registerHistoryRoutes(app: FastifyInstance, chat: ChatModule): void {
  const history = createHistoryService(chat, app.identity);

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/chat/init',
    auth: ['apiKey', 'session'],
    appBoundKey: true,
    input: initSchema,
    summary: 'Chat window data: app config and the last 30 items',
    tags: ['chat'],
    handler: ({ input, auth }) => history.initFor(auth, { kind: 'owner', ...input }),
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/chat/outLink/init',
    auth: ['outLink'],
    input: outLinkInitSchema,
    summary: 'Share-page chat window data (share link credentials)',
    tags: ['chat', 'outLink'],
    handler: ({ input, auth }) => history.initFor(auth, { kind: 'share', shareId: input.shareId, chatId: input.chatId }),
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/chat/team/init',
    auth: ['teamSpace'],
    input: teamInitSchema,
    summary: 'Team-space chat window data (teamId + teamToken)',
    tags: ['chat'],
    handler: ({ input, auth }) => history.initFor(auth, { kind: 'team', appId: input.appId, chatId: input.chatId }),
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/chat/getHistories',
    auth: CHAT_KINDS,
    appBoundKey: true,
    input: historiesSchema,
    response: historiesResponse,
    summary: 'Chat windows of the caller for an app (pinned first, newest first)',
    tags: ['chat'],
    handler: async ({ input, auth }) => history.histories(auth, input.appId),
  });

  definePlatformRoute(app, {
    methods: ['GET', 'PUT', 'POST'],
    url: '/core/chat/updateHistory',
    auth: CHAT_KINDS,
    appBoundKey: true,
    input: updateHistorySchema,
    summary: 'Sets the title, custom title or pin of a chat',
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      await history.update(auth, input);
      return null;
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'DELETE', 'POST'],
    url: '/core/chat/delHistory',
    auth: CHAT_KINDS,
    appBoundKey: true,
    input: chatRefSchema,
    summary: 'Deletes one chat and its items',
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      await history.deleteChat(auth, input.appId, input.chatId);
      return null;
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'DELETE', 'POST'],
    url: '/core/chat/clearHistories',
    auth: CHAT_KINDS,
    appBoundKey: true,
    input: clearHistoriesSchema,
    summary: "Deletes all of the caller's chats of an app",
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      await history.clear(auth, input.appId);
      return null;
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'DELETE', 'POST'],
    url: '/core/chat/item/delete',
    auth: CHAT_KINDS,
    appBoundKey: true,
    input: itemDeleteSchema,
    summary: 'Deletes one chat item (contentId = its dataId)',
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      await history.deleteItem(auth, input);
      return null;
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/chat/getResData',
    auth: CHAT_KINDS,
    appBoundKey: true,
    input: resDataSchema,
    summary: 'Node responses of one AI item',
    tags: ['chat'],
    handler: ({ input, auth }) => history.resData(auth, input),
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST', 'PUT'],
    url: '/core/chat/feedback/updateUserFeedback',
    auth: CHAT_KINDS,
    appBoundKey: true,
    input: feedbackSchema,
    summary: 'Sets the given user feedback fields and clears the absent ones',
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      await history.setUserFeedback(auth, input);
      return null;
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'PUT'],
    url: '/core/chat/feedback/adminUpdate',
    auth: ['session'],
    input: adminFeedbackSchema,
    summary: 'Annotates an answer from the app logs with the dataset entry that corrects it (adminFeedback)',
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      await history.setAdminFeedback(auth, input);
      return null;
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/chat/feedback/closeCustom',
    auth: ['session'],
    input: closeCustomSchema,
    summary: 'Removes one custom feedback of a chat item',
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      await history.closeCustomFeedback(auth, input);
      return null;
    },
  });
}
