/** core/chat/inputGuide/*: suggestions shown while typing. */
import type { FastifyInstance } from 'fastify';
import { Errors } from '../../infra/errors.js';
import { escapeRegex } from '../../infra/mongo.js';
import { pageSkipLimit } from '../../infra/zod.js';
import { definePlatformRoute } from '../define-route.js';
import {
  guideCountSchema,
  guideCreateSchema,
  guideDeleteAllSchema,
  guideDeleteSchema,
  guideListSchema,
  guideQuerySchema,
  guideUpdateSchema,
} from './chat.schema.js';
import type { ChatModule } from './chat-module.js';

export function registerInputGuideRoutes(app: FastifyInstance, chat: ChatModule): void {
  const guides = chat.repo.guides;

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/chat/inputGuide/countTotal',
    auth: ['session'],
    input: guideCountSchema,
    summary: 'Number of input guide texts of an app',
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      if (!input.appId) return { total: 0 };
      await chat.apps.authorize(auth, input.appId, 'read');
      return { total: await guides.count(input.appId) };
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/chat/inputGuide/list',
    auth: ['session'],
    input: guideListSchema,
    summary: 'Input guide texts of an app, newest first',
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      await chat.apps.authorize(auth, input.appId, 'read');
      // The reference used the search key unescaped; we escape it.
      const regex = input.searchKey ? new RegExp(escapeRegex(input.searchKey), 'i') : undefined;
      const { skip, limit } = pageSkipLimit(input.current, input.pageSize, input.offset);
      return guides.list(input.appId, regex, skip, limit);
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/core/chat/inputGuide/query',
    auth: ['outLink', 'teamSpace', 'session'],
    input: guideQuerySchema,
    summary: 'Up to 6 input guide texts matching what the user types',
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      if (auth.authType === 'outLink' && auth.appId !== input.appId) throw Errors.unAuthApp('This share link belongs to another app');
      // A member chats in the web client only with apps they may read; a share link or team
      // space is itself the grant for its app.
      if (auth.authType === 'token') await chat.apps.authorize(auth, input.appId, 'read');
      else await chat.apps.findInTeam(auth.teamId, input.appId);
      return guides.query(input.appId, new RegExp(escapeRegex(input.searchKey), 'i'), input.searchKey, 6);
    },
  });

  definePlatformRoute(app, {
    methods: ['POST'],
    url: '/core/chat/inputGuide/create',
    auth: ['session'],
    input: guideCreateSchema,
    summary: 'Adds input guide texts; duplicates are skipped',
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      await chat.apps.authorize(auth, input.appId, 'write');
      const insertLength = await guides.insertMany(input.appId, input.textList);
      await chat.apps.confirmWrite(auth.teamId, input.appId);
      return { insertLength };
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'PUT'],
    url: '/core/chat/inputGuide/update',
    auth: ['session'],
    input: guideUpdateSchema,
    summary: 'Changes one input guide text',
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      await chat.apps.authorize(auth, input.appId, 'write');
      const result = await guides.update(input.appId, input.dataId, input.text);
      if (result === 'missing') throw Errors.notFound(`Input guide ${input.dataId} not found in this app`);
      if (result === 'duplicate') throw Errors.conflict(`The input guide text '${input.text}' already exists`);
      return {};
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'DELETE'],
    url: '/core/chat/inputGuide/delete',
    auth: ['session'],
    input: guideDeleteSchema,
    summary: 'Deletes input guide texts by id',
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      await chat.apps.authorize(auth, input.appId, 'write');
      await guides.deleteMany(input.appId, input.dataIdList);
      return {};
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'DELETE'],
    url: '/core/chat/inputGuide/deleteAll',
    auth: ['session'],
    input: guideDeleteAllSchema,
    summary: 'Deletes every input guide text of an app',
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      await chat.apps.authorize(auth, input.appId, 'write');
      await guides.deleteAll(input.appId);
      return {};
    },
  });
}
