/** core/chat/* history, init and feedback routes. */
import type { FastifyInstance } from 'fastify';
import { Errors } from '../../infra/errors.js';
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
import { assertKeyMayUseApp, managerRightsReachChats } from './chat-access.js';
import type { ChatModule } from './chat-module.js';
import { createHistoryService } from './history.service.js';

const CHAT_KINDS = ['outLink', 'teamSpace', 'apiKey', 'session'] as const;

export function registerHistoryRoutes(app: FastifyInstance, chat: ChatModule): void {
  const history = createHistoryService(chat);

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/chat/init',
    auth: ['apiKey', 'session'],
    appBoundKey: true,
    input: initSchema,
    summary: 'Chat window data: app config and the last 30 items',
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      if (!input.appId) throw Errors.noAppYet();
      assertKeyMayUseApp(auth, input.appId);
      const { app: appDoc, permission } = await chat.apps.authorize(auth, input.appId, 'read');
      const existing = input.chatId ? await chat.repo.findChat(input.appId, input.chatId) : null;
      const managerMayRead = permission.hasManagePer && managerRightsReachChats(auth);
      if (!managerMayRead && !chat.access.mayUseChat(auth, existing, 'read')) throw Errors.unAuthChat(`Chat ${input.chatId} belongs to someone else`);
      return history.initData({ app: appDoc, chat: existing, chatId: input.chatId, loadCustomFeedbacks: input.loadCustomFeedbacks, fields: 'owner' });
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/chat/outLink/init',
    auth: ['outLink'],
    input: outLinkInitSchema,
    summary: 'Share-page chat window data (share link credentials)',
    tags: ['chat', 'outLink'],
    handler: async ({ input, auth }) => {
      const link = await chat.outLinks.linkOf(auth);
      const appDoc = await chat.apps.findInTeam(auth.teamId, link.appId);
      const existing = input.chatId ? await chat.repo.findChat(appDoc._id, input.chatId, { shareId: input.shareId }) : null;
      if (!chat.access.mayUseChat(auth, existing, 'read')) throw Errors.unAuthChat(`Chat ${input.chatId} belongs to someone else`);
      const detail = link.responseDetail || appDoc.type === 'plugin';
      // The visitor's messages show the link creator's avatar, as the reference's share page.
      const creator = (await app.identity.teams.memberProfiles(link.teamId, [link.tmbId])).get(link.tmbId);
      return history.initData({ app: appDoc, chat: existing, chatId: input.chatId, fields: detail ? 'shareDetail' : 'share', userAvatar: creator?.avatar || undefined });
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/chat/team/init',
    auth: ['teamSpace'],
    input: teamInitSchema,
    summary: 'Team-space chat window data (teamId + teamToken)',
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      const appDoc = await chat.apps.findInTeam(auth.teamId, input.appId);
      const existing = input.chatId ? await chat.repo.findChat(input.appId, input.chatId, { teamId: appDoc.teamId }) : null;
      if (!chat.access.mayUseChat(auth, existing, 'read')) throw Errors.unAuthChat(`Chat ${input.chatId} belongs to someone else`);
      // The team's avatar on the user's messages, as the reference's team space.
      const team = await app.identity.teams.findTeam(auth.teamId);
      return history.initData({ app: appDoc, chat: existing, chatId: input.chatId, fields: 'team', userAvatar: team?.avatar || undefined });
    },
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
      await chat.access.authChatCrud(auth, input.appId, input.chatId, 'write');
      await chat.repo.updateChat(input.appId, input.chatId, { title: input.title, customTitle: input.customTitle, top: input.top }, new Date(chat.now()));
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
      await chat.access.authChatCrud(auth, input.appId, input.chatId, 'write');
      await chat.repo.deleteChats(auth.teamId, input.appId, [input.chatId]);
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
      assertKeyMayUseApp(auth, input.appId);
      if (!input.chatId || !input.contentId) return null;
      await chat.access.authChatCrud(auth, input.appId, input.chatId, 'write');
      await chat.repo.deleteItem(auth.teamId, input.appId, input.chatId, input.contentId);
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
    handler: async ({ input, auth }) => {
      assertKeyMayUseApp(auth, input.appId);
      if (!input.appId || !input.chatId || !input.dataId) return {};
      return history.resData(auth, input.appId, input.chatId, input.dataId);
    },
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
      const dataId = input.chatItemId ?? input.dataId;
      if (!dataId) throw Errors.missingParams("Missing field 'chatItemId' (chatItemId is required)");
      await chat.access.authChatCrud(auth, input.appId, input.chatId, 'read');
      if (!(await chat.repo.setFeedback(input.appId, input.chatId, dataId, input.userGoodFeedback, input.userBadFeedback))) {
        throw Errors.notFound(`Chat item ${dataId} not found in chat ${input.chatId}`);
      }
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
      await chat.access.authChatOrAppManager(auth, input.appId, input.chatId);
      // The annotation points at a dataset entry: one the caller can read, in the dataset (and
      // collection) it names, so the stored annotation never points elsewhere.
      await chat.datasets.authorize(auth, input.datasetId, 'read');
      const entry = await chat.datasets.authorizeData(auth, input.feedbackDataId);
      if (entry.datasetId !== input.datasetId || (input.collectionId && entry.collectionId !== input.collectionId)) {
        throw Errors.missingParams(`Invalid field 'feedbackDataId': entry ${input.feedbackDataId} is not in the dataset${input.collectionId ? ' and collection' : ''} named`);
      }
      const feedback = { datasetId: input.datasetId, ...(input.collectionId ? { collectionId: input.collectionId } : {}), dataId: input.feedbackDataId, q: input.q, ...(input.a !== undefined ? { a: input.a } : {}) };
      if (!(await chat.repo.setAdminFeedback(input.appId, input.chatId, input.chatItemId, feedback))) {
        throw Errors.notFound(`Chat item ${input.chatItemId} not found in chat ${input.chatId}`);
      }
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
      const dataId = input.chatItemId ?? input.dataId;
      if (!dataId) throw Errors.missingParams("Missing field 'chatItemId' (chatItemId is required)");
      await chat.access.authChatCrud(auth, input.appId, input.chatId, 'read');
      if (!(await chat.repo.closeCustomFeedback(input.appId, input.chatId, dataId, input.index))) throw Errors.notFound(`Chat item ${dataId} not found`);
      return null;
    },
  });
}
