/**
 * The apps the chat area runs, read through the apps module (`app.appsAccess`, workflow parts
 * decoded) plus the shared resource-permission rules for a caller's permission on an app.
 */
import type { FastifyInstance } from 'fastify';
import type { ObjectId } from 'mongodb';
import type { RequiredPermission, SerializedPermission } from '../../domain/permission.js';
import type { StoreEdge, StoreNode } from '../../domain/workflow/types.js';
import { Errors } from '../../infra/errors.js';
import { isObjectIdHex, toObjectId } from '../../infra/mongo.js';
import { createAppPermissionService } from '../apps/app-permissions.js';
import type { App } from '../apps/apps.repo.js';
import type { AuthContext } from '../auth/types.js';

export type AppDoc = App;

export interface RunGraph {
  nodes: StoreNode[];
  edges: StoreEdge[];
  chatConfig: Record<string, unknown>;
}

export function createAppSource(app: FastifyInstance) {
  // The apps module's own rules, so folder kinds (folder, httpPlugin) resolve the same way.
  const permissions = createAppPermissionService(app.mongo.db);

  async function load(appId: string): Promise<AppDoc> {
    const found = await app.appsAccess.findApp(appId);
    if (!found) throw Errors.appUnExist(`App ${appId} not found`);
    return found;
  }

  return {
    objectId: (id: string, field = 'appId') => toObjectId(id, field),

    /** The app, if it exists and belongs to the caller's team with the required permission. */
    async authorize(auth: AuthContext, appId: unknown, required: RequiredPermission, field = 'appId'): Promise<{ app: AppDoc; permission: SerializedPermission }> {
      const { permission } = await permissions.authorize(auth, appId, required, field);
      return { app: await load(String(appId)), permission };
    },

    /** The app within a team (credentials already bound to the team: keys, links). */
    async findInTeam(teamId: string, appId: string): Promise<AppDoc> {
      if (!isObjectIdHex(appId)) throw Errors.missingParams("Invalid field 'appId': expected a 24-character hex id");
      const found = await load(appId);
      if (found.teamId.toHexString() !== teamId) throw Errors.unAuthApp(`App ${appId} belongs to another team`);
      return found;
    },

    async touch(appId: ObjectId, now: Date): Promise<void> {
      await app.mongo.db.collection('apps').updateOne({ _id: appId }, { $set: { updateTime: now } });
    },

    /** The graph chat runs: newest published version, else the app's own modules. */
    async runGraph(appDoc: AppDoc): Promise<RunGraph> {
      const latest = await app.appsAccess.latestVersion(appDoc);
      return { nodes: latest.nodes as unknown as StoreNode[], edges: latest.edges as unknown as StoreEdge[], chatConfig: latest.chatConfig ?? {} };
    },
  };
}

export type AppSource = ReturnType<typeof createAppSource>;
