/** core/chat/inputGuide/*: suggestions shown while typing. */
import type { FastifyInstance } from 'fastify';
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
import { createInputGuideService } from './input-guide.service.js';

export function registerInputGuideRoutes(app: FastifyInstance, chat: ChatModule): void {
  const guides = createInputGuideService({ guides: chat.repo.guides, apps: chat.apps });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/chat/inputGuide/countTotal',
    auth: ['session'],
    input: guideCountSchema,
    summary: 'Number of input guide texts of an app',
    tags: ['chat'],
    handler: ({ input, auth }) => guides.count(auth, input.appId),
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/chat/inputGuide/list',
    auth: ['session'],
    input: guideListSchema,
    summary: 'Input guide texts of an app, newest first',
    tags: ['chat'],
    handler: ({ input, auth }) => guides.list(auth, input.appId, input.searchKey, pageSkipLimit(input.current, input.pageSize, input.offset)),
  });

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/core/chat/inputGuide/query',
    auth: ['outLink', 'teamSpace', 'session'],
    input: guideQuerySchema,
    summary: 'Up to 6 input guide texts matching what the user types',
    tags: ['chat'],
    handler: ({ input, auth }) => guides.query(auth, input.appId, input.searchKey),
  });

  definePlatformRoute(app, {
    methods: ['POST'],
    url: '/core/chat/inputGuide/create',
    auth: ['session'],
    input: guideCreateSchema,
    summary: 'Adds input guide texts; duplicates are skipped',
    tags: ['chat'],
    handler: async ({ input, auth }) => ({ insertLength: await guides.create(auth, input.appId, input.textList) }),
  });

  definePlatformRoute(app, {
    methods: ['POST', 'PUT'],
    url: '/core/chat/inputGuide/update',
    auth: ['session'],
    input: guideUpdateSchema,
    summary: 'Changes one input guide text',
    tags: ['chat'],
    handler: async ({ input, auth }) => {
      await guides.update(auth, input.appId, input.dataId, input.text);
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
      await guides.delete(auth, input.appId, input.dataIdList);
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
      await guides.deleteAll(auth, input.appId);
      return {};
    },
  });
}
