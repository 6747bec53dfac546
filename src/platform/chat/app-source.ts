/**
 * The apps the chat area runs, read through the apps module (`app.apps`, workflow parts
 * decoded) including the caller's permission on an app.
 */
import type { FastifyInstance } from 'fastify';
import type { RequiredPermission, SerializedPermission } from '../../domain/permission.js';
import { withNodeLists } from '../../domain/workflow/node-lists.js';
import type { StoreEdge, StoreNode } from '../../domain/workflow/types.js';
import { Errors } from '../../infra/errors.js';
import { requireHexId } from '../../infra/mongo.js';
import type { App } from '../apps/apps.repo.js';
import type { AuthContext } from '../auth/types.js';
import { graphOfDraft, graphOfVersion } from './interactive-seal.js';

export type AppDoc = App;

export interface RunGraph {
  nodes: StoreNode[];
  edges: StoreEdge[];
  chatConfig: Record<string, unknown>;
}

/** A stored app's graph as a run reads it, with the id its interactive states are sealed under. */
export interface StoredRunGraph extends RunGraph {
  /** graphOfVersion of the version read, else graphOfDraft of the draft read (interactive-seal.ts). */
  graphId: string;
}

/**
 * The mark of an app's draft: its last draft write (`draftWriteId`, which every write of the
 * workflow renews and nothing else does). An app stored before writes were marked has its id with
 * a constant, steady until its draft is next written. Not `updateTime`: an owner's turn writes it
 * (apps.touch), which would refuse the states handed out before.
 */
const draftMarkOf = (appDoc: AppDoc): string => appDoc.draftWriteId ?? `${appDoc._id}:unmarked`;

export function createAppSource(app: FastifyInstance) {
  async function load(appId: string): Promise<AppDoc> {
    const found = await app.apps.findApp(appId);
    if (!found) throw Errors.appUnExist(`App ${appId} not found`);
    return found;
  }

  return {
    /** The app, if it exists and belongs to the caller's team with the required permission. */
    authorize: (auth: AuthContext, appId: unknown, required: RequiredPermission, field = 'appId'): Promise<{ app: AppDoc; permission: SerializedPermission }> =>
      app.apps.authorize(auth, appId, required, field),

    /** The app within a team (credentials already bound to the team: keys, links). */
    async findInTeam(teamId: string, appId: string): Promise<AppDoc> {
      requireHexId(appId, 'appId');
      const found = await app.apps.findInTeam(teamId, appId);
      if (found) return found;
      // Not in the team: missing (404) or another team's (403), as before.
      await load(appId);
      throw Errors.unAuthApp(`App ${appId} belongs to another team`);
    },

    touch: (appDoc: AppDoc, now: Date): Promise<void> => app.apps.touch(appDoc.teamId, appDoc._id, now),

    /** After writing something of an app checked before: 404 once it went meanwhile (what it left removed). */
    confirmWrite: (teamId: string, appId: string): Promise<void> => app.apps.confirmDependentWrite(teamId, appId),

    /** After saving a turn: false once the app went meanwhile (the turn removed with what it left). */
    standsAfterSave: (appDoc: AppDoc): Promise<boolean> => app.apps.afterDependentWrite(appDoc.teamId, appDoc._id),

    /**
     * The graph chat runs: newest published version, else the app's own modules (its draft). The
     * seal id comes from the same read, so a publish landing during a turn never seals a state
     * of one version under another.
     */
    async runGraph(appDoc: AppDoc): Promise<StoredRunGraph> {
      const latest = await app.apps.latestVersion(appDoc);
      return {
        nodes: withNodeLists(latest.nodes as unknown as StoreNode[]),
        edges: latest.edges as unknown as StoreEdge[],
        chatConfig: latest.chatConfig ?? {},
        graphId: latest.versionId ? graphOfVersion(latest.versionId) : graphOfDraft(draftMarkOf(appDoc)),
      };
    },
  };
}

export type AppSource = ReturnType<typeof createAppSource>;
