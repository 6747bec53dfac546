import type { FastifyInstance } from 'fastify';
import { definePlatformRoute } from '../define-route.js';
import { appIdInput, publishInput, renameVersionInput, revertInput, versionIdInput, versionListInput } from './apps.schema.js';
import type { VersionsService } from './versions.service.js';

const tags = ['app versions'];

export function registerVersionRoutes(app: FastifyInstance, versions: VersionsService): void {
  const session = ['session'] as const;

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/version/publish',
    auth: session,
    input: publishInput,
    summary: 'Save (isPublish false) or publish a version of the workflow',
    tags,
    handler: async ({ input, auth }) => {
      await versions.publish(auth, input);
      return {};
    },
  });

  for (const url of ['/core/app/version/list', '/core/app/version/listWorkflow', '/core/app/version/listWorkflowx']) {
    const full = url.endsWith('/list');
    definePlatformRoute(app, {
      methods: ['GET', 'POST'],
      url,
      auth: session,
      input: versionListInput,
      summary: full ? 'Versions of an app, newest first (full documents; write needed)' : 'Workflow edit history, newest first (names and times only)',
      tags,
      handler: ({ input, auth }) => versions.page(auth, input, full),
    });
  }

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/version/latest',
    auth: session,
    input: appIdInput,
    summary: 'The newest published version (what chat runs), else the draft',
    tags,
    handler: ({ input, auth }) => versions.latest(auth, input.appId),
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/version/detail',
    auth: session,
    input: versionIdInput,
    summary: 'One version of the app (its full workflow; write needed)',
    tags,
    handler: ({ input, auth }) => versions.detail(auth, input.appId, input.versionId),
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/version/revert',
    auth: session,
    input: revertInput,
    summary: 'Make an old version the current draft (the edit state is kept as a version)',
    tags,
    handler: async ({ input, auth }) => {
      await versions.revert(auth, input);
      return {};
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'PUT', 'GET'],
    url: '/core/app/version/update',
    auth: session,
    input: renameVersionInput,
    summary: 'Rename a version',
    tags,
    handler: async ({ input, auth }) => {
      await versions.rename(auth, input);
      return {};
    },
  });
}
