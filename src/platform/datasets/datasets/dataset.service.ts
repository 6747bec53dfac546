import { folderBreadcrumb } from '../../../domain/folder-breadcrumb.js';
import { describeError } from '../../../infra/database-errors.js';
import { Errors } from '../../../infra/errors.js';
import type { LockHold } from '../../../infra/mongo-lock.js';
import { newId } from '../../../infra/plain-record.js';
import type { AuthContext } from '../../auth/types.js';
import { assertPermissionUpdate, assertTeamPermission, callerOf } from '../../permissions/resource-permission.service.js';
import { purgeDeletedDatasets, startDatasetDeletion } from '../cascade.js';
import type { DatasetsContext } from '../context.js';
import { modelView } from '../model-view.js';
import type { DatasetRecord, DatasetType } from './dataset.repo.js';
import type { CreateDatasetInput, UpdateDatasetInput } from './dataset.schema.js';
import { type ListedEntry, selectDatasets } from './dataset-list.read-model.js';

const FOLDER_AVATAR = '/imgs/files/folder.svg';
const DATASET_AVATAR = '/icon/logo.svg';


export function createDatasetService(ctx: DatasetsContext) {
  const { datasets } = ctx.repos;

  const vectorModelOf = (dataset: Pick<DatasetRecord, 'vectorModel'>) => modelView(ctx.models.getVectorModel(dataset.vectorModel), ctx.models.catalog.vectorModels[0], dataset.vectorModel);

  async function create(auth: AuthContext, input: CreateDatasetInput & { type?: DatasetType }, folder = false): Promise<string> {
    assertTeamPermission(auth, 'write');
    const type: DatasetType = folder ? 'folder' : (input.type ?? 'dataset');
    const vectorModel = input.vectorModel ?? ctx.models.defaultVectorModel().model;
    ctx.embedders().vectorModel(vectorModel);
    if (input.agentModel && !ctx.models.getLLMModel(input.agentModel)) {
      throw Errors.invalidVectorModelOrQAModel(`Unknown agent model '${input.agentModel}'`);
    }
    const agentModel = input.agentModel ?? ctx.models.defaultLLMModel()?.model ?? '';
    if (input.parentId) {
      const parent = await ctx.auth.authDataset(auth, input.parentId, 'write', 'parentId');
      if (parent.dataset.type !== 'folder') throw Errors.missingParams(`Invalid field 'parentId': ${input.parentId} is not a folder`);
    }
    const parentId = input.parentId ?? null;
    /** The new dataset's id once its document may have landed: from then on its room goes back with its delete. */
    let landed: string | undefined;
    /**
     * As an app insert: the rows a folder inherits first, the dataset document last, so the
     * dataset is never seen without them (a crash between leaves rows of an id nothing uses).
     * The document comes after a check of the tree lock: a holder that lost it (the folder's rows
     * it read may have changed since, or the folder gone) inserts nothing and takes its rows back.
     */
    const insert = async (lock: LockHold) => {
      const initial = await ctx.permissions.initialFor(auth.teamId, type === 'folder', parentId, auth.tmbId);
      const id = newId();
      try {
        if (initial.collaborators.length > 0) await ctx.permissions.writeCollaborators(auth.teamId, id, initial.collaborators);
        lock.assertHeld();
        landed = id;
        await datasets.insert({
          _id: id,
          parentId,
          teamId: auth.teamId,
          tmbId: auth.tmbId,
          type,
          name: input.name,
          intro: input.intro ?? '',
          avatar: input.avatar ?? (type === 'folder' ? FOLDER_AVATAR : DATASET_AVATAR),
          vectorModel,
          agentModel,
          defaultPermission: initial.defaultPermission,
        });
      } catch (error) {
        // An insert whose answer was lost, or that landed before its list stamp failed, is taken back whole below.
        if (!(await datasets.findById(auth.teamId, id).catch(() => null))) {
          landed = undefined;
          if (initial.collaborators.length > 0) {
            await ctx.permissions
              .deleteAllFor(auth.teamId, [id])
              .catch((undo: unknown) => ctx.log.warn(`permission rows of dataset ${id}, not created, kept after a failure: ${describeError(undo)}`));
          }
        }
        throw error;
      }
      return id;
    };
    try {
      // Under the tree lock: the folder cannot be deleted between this check and the insert, and
      // the plan counter is only ever changed by one request of the team at a time (reserve here,
      // release in remove), so parallel creates cannot pass the limit even where the database
      // does not apply concurrent conditional updates atomically (FerretDB).
      return await ctx.withDatasetTree(auth.teamId, async (lock) => {
        if (parentId) {
          const parent = await datasets.findById(auth.teamId, parentId);
          if (!parent) throw Errors.unExistDataset(`Dataset ${parentId} not found`);
          if (parent.type !== 'folder') throw Errors.missingParams(`Invalid field 'parentId': ${parentId} is not a folder`);
        }
        const counted = type !== 'folder';
        if (counted) await ctx.teamLimits.reserveDatasets(auth.teamId, 1);
        try {
          return await insert(lock);
        } catch (error) {
          if (counted && !landed) await ctx.teamLimits.releaseDatasets(auth.teamId, 1);
          throw error;
        }
      });
    } catch (error) {
      // The create answers an error, so the dataset it wrote goes (with its rows and room), as a
      // delete takes it: a client's retry then makes one dataset, not a second one beside it.
      if (landed) await deleteDataset(auth.teamId, landed).catch((undo: unknown) => ctx.log.warn(`dataset ${landed} created before a failure and kept: ${describeError(undo)}`));
      throw error;
    }
  }

  /**
   * Gone for users once the tree-locked first step is done; the content goes after (cascade.ts).
   * A failure then is not the caller's: the dataset is deleted, and the recorded deletion is
   * finished by the periodic sweep or the next start.
   */
  async function deleteDataset(teamId: string, id: string): Promise<void> {
    const deletion = await ctx.withDatasetTree(teamId, (lock) => startDatasetDeletion(ctx, lock, teamId, id));
    await purgeDeletedDatasets(ctx, deletion).catch((error: unknown) => {
      ctx.log.warn(`dataset ${id} deleted; removing its content failed and is left to the sweep: ${describeError(error)}`);
    });
  }

  /**
   * Served from the team's read model (one stamp read when nothing changed). The listed folder
   * is judged in memory when the team has it; otherwise authorised against the database, which
   * answers the exact error (missing, another team's).
   */
  async function list(auth: AuthContext, input: { parentId?: string | null; type?: string | string[]; searchKey?: string }) {
    if (!input.parentId) assertTeamPermission(auth, 'read');
    const team = await ctx.datasetList.team(auth.teamId);
    const own = team.rows.get(auth.tmbId);
    const rowOf = (id: string) => own?.get(id);
    if (input.parentId) await ctx.permissions.authorizeIn(team, auth, input.parentId, 'read', 'parentId');
    const types = input.type === undefined ? undefined : Array.isArray(input.type) ? input.type : [input.type];
    const selected = selectDatasets(team, { parentId: input.parentId, types, searchKey: input.searchKey?.trim() });
    const caller = callerOf(auth);
    const resourceOf = (id: string) => team.byId.get(id)?.resource;
    return selected.flatMap((entry) => {
      const resolved = ctx.permissions.resolveLoaded(caller, entry.resource, resourceOf, rowOf);
      if (!resolved.permission.hasReadPer) return [];
      const item = entry.doc;
      return [
        {
          _id: item._id,
          parentId: item.parentId,
          avatar: item.avatar,
          name: item.name,
          intro: item.intro,
          type: item.type,
          permission: resolved.permission,
          vectorModel: vectorModelOf(item),
          defaultPermission: resolved.defaultPermission,
          inheritPermission: item.inheritPermission !== false,
          tmbId: item.tmbId,
          updateTime: item.updateTime,
        },
      ];
    });
  }

  async function allDatasets(auth: AuthContext) {
    assertTeamPermission(auth, 'read');
    const team = await ctx.datasetList.team(auth.teamId);
    const own = team.rows.get(auth.tmbId);
    const caller = callerOf(auth);
    const readable = (entry: ListedEntry) =>
      ctx.permissions.resolveLoaded(caller, entry.resource, (id) => team.byId.get(id)?.resource, (id) => own?.get(id)).permission.hasReadPer;
    return team.entries
      .filter((entry) => entry.doc.type !== 'folder' && readable(entry))
      .map(({ doc: item }) => ({ _id: item._id, avatar: item.avatar, name: item.name, vectorModel: vectorModelOf(item) }));
  }

  async function detail(auth: AuthContext, id: string) {
    const { dataset, permission, defaultPermission } = await ctx.auth.authDataset(auth, id, 'read', 'id');
    return {
      ...dataset,
      defaultPermission,
      inheritPermission: dataset.inheritPermission !== false,
      permission,
      vectorModel: vectorModelOf(dataset),
      agentModel: modelView(ctx.models.getLLMModel(dataset.agentModel), ctx.models.defaultLLMModel(), dataset.agentModel),
    };
  }

  async function update(auth: AuthContext, input: UpdateDatasetInput) {
    const needsManage = input.defaultPermission !== undefined;
    const { dataset } = await ctx.auth.authDataset(auth, input.id, needsManage ? 'manage' : 'write', 'id');
    const agentModel = typeof input.agentModel === 'string' ? input.agentModel : input.agentModel?.model;
    if (agentModel && !ctx.models.getLLMModel(agentModel)) throw Errors.invalidVectorModelOrQAModel(`Unknown agent model '${agentModel}'`);
    assertPermissionUpdate(dataset, input);
    if (input.parentId !== undefined && input.parentId !== dataset.parentId) {
      await ctx.permissions.move(auth, dataset, input.parentId);
    }
    // Compared with the default in force, not the stored one: an inheriting dataset shows its
    // folder's, and making it private (0, as stored) must still break the inheritance.
    if (input.defaultPermission !== undefined) {
      const fresh = (await datasets.findById(auth.teamId, dataset._id)) ?? dataset;
      await ctx.permissions.changeDefaultPermission(auth, fresh, input.defaultPermission);
    }
    await datasets.update(auth.teamId, dataset._id, {
      ...(input.name ? { name: input.name } : {}),
      ...(input.avatar ? { avatar: input.avatar } : {}),
      ...(input.intro !== undefined ? { intro: input.intro } : {}),
      ...(agentModel ? { agentModel } : {}),
      ...(input.status ? { status: input.status } : {}),
      ...(input.websiteConfig ? { websiteConfig: input.websiteConfig } : {}),
      ...(input.externalReadUrl ? { externalReadUrl: input.externalReadUrl } : {}),
    });
    return null;
  }

  async function paths(auth: AuthContext, parentId: string | null | undefined) {
    if (!parentId) return [];
    const { dataset } = await ctx.auth.authDataset(auth, parentId, 'read', 'parentId');
    return folderBreadcrumb(dataset, (id) => datasets.findById(auth.teamId, id));
  }

  async function resumeInheritPermission(auth: AuthContext, datasetId: string) {
    const { dataset } = await ctx.auth.authDataset(auth, datasetId, 'manage');
    await ctx.permissions.resumeInheritance(auth, dataset);
    return null;
  }

  async function remove(auth: AuthContext, id: string) {
    const { dataset } = await ctx.auth.authDataset(auth, id, 'owner', 'id');
    await deleteDataset(auth.teamId, dataset._id);
    return null;
  }

  return { create, list, allDatasets, detail, update, paths, resumeInheritPermission, remove };
}

export type DatasetService = ReturnType<typeof createDatasetService>;
