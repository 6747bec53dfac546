import type { FastifyInstance } from 'fastify';
import type { ChatServices } from '../chat/chat-module.js';
import { definePlatformRoute } from '../define-route.js';
import type { createAppCrud } from './app-crud.service.js';
import {
  appIdInput,
  appListResponse,
  chatLogsInput,
  collaboratorDeleteInput,
  collaboratorUpdateInput,
  createAppInput,
  createFolderInput,
  folderPathInput,
  listAppsInput,
  transitionInput,
  updateAppInput,
} from './apps.schema.js';
import type { AppsCore, AppsDeps } from './apps.service.js';

const tags = ['apps'];

export function registerAppRoutes(
  app: FastifyInstance,
  crud: ReturnType<typeof createAppCrud>,
  core: AppsCore,
  deps: AppsDeps,
  chatLogs: ChatServices['logs'],
): void {
  const session = ['session'] as const;

  definePlatformRoute(app, {
    methods: ['POST'],
    url: '/core/app/create',
    auth: session,
    input: createAppInput,
    summary: 'Create an app (any type); returns its id',
    tags,
    handler: ({ input, auth }) => crud.create(auth, input),
  });
  definePlatformRoute(app, {
    methods: ['POST'],
    url: '/core/app/folder/create',
    auth: session,
    input: createFolderInput,
    summary: 'Create an app folder (copies the parent folder permissions)',
    tags,
    handler: ({ input, auth }) => crud.createFolder(auth, input),
  });
  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/folder/path',
    auth: session,
    input: folderPathInput,
    summary: 'Folder path from the root to the given folder',
    tags,
    handler: ({ input, auth }) => crud.folderPath(auth, input.parentId),
  });
  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/core/app/list',
    auth: session,
    input: listAppsInput,
    response: appListResponse,
    summary: 'List apps the caller can read (parentId absent = whole team, null = root)',
    tags,
    handler: ({ input, auth }) => crud.list(auth, input),
  });
  definePlatformRoute(app, {
    methods: ['GET'],
    url: '/core/app/detail',
    auth: session,
    input: appIdInput,
    summary: 'App detail (nodes and edges hidden without write permission)',
    tags,
    handler: ({ input, auth }) => crud.detail(auth, input.appId),
  });
  definePlatformRoute(app, {
    methods: ['GET', 'PUT', 'POST'],
    url: '/core/app/update',
    auth: session,
    input: updateAppInput,
    summary: 'Update fields, change the default permission, or move (parentId)',
    tags,
    handler: ({ input, auth }) => crud.update(auth, input),
  });
  definePlatformRoute(app, {
    methods: ['GET', 'DELETE', 'POST'],
    url: '/core/app/del',
    auth: session,
    input: appIdInput,
    summary: 'Delete an app with its subtree, chats, share links, versions, keys (owner only)',
    tags,
    handler: ({ input, auth }) => crud.remove(auth, input.appId),
  });
  definePlatformRoute(app, {
    methods: ['POST'],
    url: '/core/app/copy',
    auth: session,
    input: appIdInput,
    summary: 'Copy an app next to the original; returns { appId }',
    tags,
    handler: ({ input, auth }) => crud.copy(auth, input.appId),
  });
  definePlatformRoute(app, {
    methods: ['POST'],
    url: '/core/app/transitionWorkflow',
    auth: session,
    input: transitionInput,
    summary: 'Turn a simple app into a workflow (or a workflow copy with createNew)',
    tags,
    handler: ({ input, auth }) => crud.transitionWorkflow(auth, input.appId, input.createNew ?? false),
  });
  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/resumeInheritPermission',
    auth: session,
    input: appIdInput,
    summary: 'Make the app inherit its folder permissions again',
    tags,
    handler: ({ input, auth }) => crud.resumeInheritPermission(auth, input.appId),
  });
  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/getChatLogs',
    auth: session,
    input: chatLogsInput,
    summary: 'Chat logs of an app, newest first, with feedback counts',
    tags,
    handler: async ({ input, auth }) => {
      await core.authorizeToView(auth, input.appId, 'write');
      const page = await chatLogs.page({ teamId: auth.teamId, ...input });
      return { pageNum: input.pageNum, pageSize: input.pageSize, data: page.list, total: page.total };
    },
  });

  for (const prefix of ['/core/app/collaborator', '/proApi/core/app/collaborator']) {
    definePlatformRoute(app, {
      methods: ['GET', 'POST'],
      url: `${prefix}/list`,
      auth: session,
      input: appIdInput,
      summary: 'Collaborators of an app (the folder ones while it inherits)',
      tags,
      handler: async ({ input, auth }) => {
        const { doc } = await core.authorize(auth, input.appId, 'read');
        return deps.perms.listCollaborators(auth.teamId, doc);
      },
    });
    definePlatformRoute(app, {
      methods: ['POST', 'PUT'],
      url: `${prefix}/update`,
      auth: session,
      input: collaboratorUpdateInput,
      summary: 'Set the permission of members on an app (manage; breaks inheritance)',
      tags,
      handler: async ({ input, auth }) => {
        const { doc } = await core.authorize(auth, input.appId, 'manage');
        await deps.perms.updateCollaborators(auth, doc, input.tmbIds, input.permission);
        return null;
      },
    });
    definePlatformRoute(app, {
      methods: ['DELETE', 'GET', 'POST'],
      url: `${prefix}/delete`,
      auth: session,
      input: collaboratorDeleteInput,
      summary: 'Remove a collaborator from an app (manage; breaks inheritance)',
      tags,
      handler: async ({ input, auth }) => {
        const { doc } = await core.authorize(auth, input.appId, 'manage');
        await deps.perms.deleteCollaborator(auth, doc, input.tmbId);
        return null;
      },
    });
  }
}
