/** support/outLink/{create,list,update,delete} (session only). */
import type { FastifyInstance } from 'fastify';
import { definePlatformRoute } from '../define-route.js';
import { createOutLinkSchema, deleteOutLinkSchema, listOutLinkSchema, updateOutLinkSchema } from './outlinks.schema.js';
import type { OutLinkService } from './outlinks.service.js';

export function registerOutLinkRoutes(app: FastifyInstance, outLinks: OutLinkService): void {
  definePlatformRoute(app, {
    methods: ['POST'],
    url: '/support/outLink/create',
    auth: ['session'],
    input: createOutLinkSchema,
    summary: 'Creates a share link or messaging-channel link for an app; returns its shareId',
    tags: ['outLink'],
    handler: async ({ input, auth }) => outLinks.create(auth, input),
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/support/outLink/list',
    auth: ['session'],
    input: listOutLinkSchema,
    summary: 'Share links of an app of one type, newest first',
    tags: ['outLink'],
    handler: async ({ input, auth }) => outLinks.list(auth, input.appId, input.type),
  });

  definePlatformRoute(app, {
    methods: ['POST', 'PUT'],
    url: '/support/outLink/update',
    auth: ['session'],
    input: updateOutLinkSchema,
    summary: 'Updates a share link (fields not sent stay unchanged)',
    tags: ['outLink'],
    handler: async ({ input, auth }) => {
      await outLinks.update(auth, input);
      return {};
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'DELETE', 'POST'],
    url: '/support/outLink/delete',
    auth: ['session'],
    input: deleteOutLinkSchema,
    summary: 'Deletes a share link',
    tags: ['outLink'],
    handler: async ({ input, auth }) => {
      await outLinks.remove(auth, input.id);
      return {};
    },
  });
}
