import type { FastifyInstance } from 'fastify';
import { definePlatformRoute } from '../../define-route.js';
import { templateDetailInput } from '../apps.schema.js';
import { APP_TEMPLATES } from './index.js';

const tags = ['app templates'];

export function registerTemplateRoutes(app: FastifyInstance): void {
  const sorted = [...APP_TEMPLATES].sort((a, b) => (b.weight ?? 0) - (a.weight ?? 0));
  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/template/list',
    auth: ['session'],
    summary: 'Bundled app templates, highest weight first',
    tags,
    handler: async () => sorted.map(({ id, name, avatar, intro, author, tags: templateTags, type }) => ({ id, name, avatar, intro, author, tags: templateTags, type })),
  });
  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/template/detail',
    auth: ['session'],
    input: templateDetailInput,
    summary: 'One template with its workflow (null when unknown)',
    tags,
    handler: async ({ input }) => APP_TEMPLATES.find((t) => t.id === input.templateId) ?? null,
  });
}
