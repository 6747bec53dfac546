/**
 * Resource permissions for team-owned trees (apps and datasets share it).
 *
 * Create one service per resource collection:
 *   const perms = createResourcePermissionService(db, {
 *     collection: 'datasets', resourceType: 'dataset', folderTypes: ['folder'],
 *     errors: { notFound: Errors.unExistDataset, forbidden: Errors.unAuthDataset }, label: 'Dataset' });
 * The collection's documents need `_id, teamId, tmbId (owner), parentId (ObjectId|null), type,
 * inheritPermission?, defaultPermission?` (ObjectIds stored as ObjectId); the service sees them
 * as `ResourceDoc`s, ids as hex strings (resource-tree.repo.ts converts).
 *
 * API (all ids are hex strings; `auth` is the request's AuthContext):
 * - `authorize(auth, id, required)` → `{ doc, permission, defaultPermission }`; 400 malformed id,
 *   404 missing, 403 other team or not enough permission (the rules of domain/permission).
 * - `resolveMany(auth, docs, knownParents?)` → Map id → `{ permission, defaultPermission }` (for lists; each
 *   inheriting plain resource is judged on its real parent, loaded as needed).
 * - `authorizeIn(view, auth, id, required)`: `authorize` on a team read model's documents and
 *   rows (ids it lacks go to the database for their exact error).
 * - `judge(auth, doc, parentOf, rowOf, required)` / `resolveLoaded(caller, resource, resourceOf,
 *   rowOf)`: the rules of `authorize` / `resolveMany` on what a read model holds in memory (a
 *   document of the caller's team); same answers and errors, no database read.
 * - `initialFor(teamId, isFolder, parentId, ownerTmbId?)` / `writeCollaborators(teamId, id, list)`:
 *   what a new resource starts with (folders in a folder copy it, its owner kept as manage unless
 *   that is the new folder's owner) and writing it after the insert.
 * - `move(auth, doc, targetId|null)`: moving changes who can reach the resource, so it needs
 *   manage on the resource (403) and manage on the target folder (404 missing, 403, 400 not a
 *   folder), or manage on the team to move to the root (403 unAuthTeam); no cycle (400). Checked
 *   here, under the per-team tree lock, so every caller gets the rule and concurrent moves
 *   cannot corrupt the tree.
 * - `changeDefaultPermission(auth, doc, value)`, `resumeInheritance(auth, doc)`: apply the spec's
 *   transitions; both need manage on the resource (checked here too); a resume that would take
 *   manage from a member holding it needs owner (403, as the collaborator edits).
 * - `listCollaborators(teamId, doc)` → `[{ teamId, tmbId, permission, name, avatar }]` (what
 *   applies: the parent's list while a plain resource inherits live).
 * - `updateCollaborators(auth, doc, tmbIds, permission)`, `deleteCollaborator(auth, doc, tmbId)`:
 *   need manage (checked here); break inheritance, as FastGPT does when a collaborator changes (docs/apps.md).
 * - `deleteAllFor(teamId, ids)`: drop the rows of deleted resources.
 * - `finishInterrupted(options)`: applies again the changes a crash interrupted (start-up,
 *   sweeps; registerTreeChangeResume in tree-change-resume.ts does both).
 * Every write above calls `options.onChange(teamId)` once it is done (read models' stamps).
 * Crash safety: a change that spans documents (a folder move rewrites its inheriting subtree's
 * rows) is journaled and finished by the next holder of the team's tree lock (`tree.withTeamLock`)
 * or at start-up, so it is seen either not at all or whole (permission-writes.ts).
 * Indexes: register `RESOURCE_PERMISSION_INDEXES` (resource-permissions.repo.ts) at start-up
 * (the apps module does; doing it again is harmless).
 */
import type { Db } from 'mongodb';
import {
  type Caller,
  hasPermission,
  isAssignablePermission,
  makePermission,
  makeTeamPermission,
  type PermissionResource,
  PermissionValue,
  type RequiredPermission,
  resolvePermission,
  type SerializedPermission,
  wouldCreateCycle,
} from '../../domain/permission.js';
import {
  type Collaborator,
  changeCollaborators,
  changeDefaultPermission,
  effectiveParentRows,
  type InheritanceWrite,
  initialPermissions,
  managersLostByResume,
  move,
  type ParentPermissions,
  resumeInheritance,
} from '../../domain/permission-inheritance.js';
import { type AppError, Errors } from '../../infra/errors.js';
import { requireHexId } from '../../infra/mongo.js';
import { createPermissionWriter } from './permission-writes.js';
import { createResourcePermissionsRepo, type ResourceType } from './resource-permissions.repo.js';
import { createResourceTreeRepo, type ResourceDoc, type ResourceTreeRepo } from './resource-tree.repo.js';
import { createTreeChangesRepo } from './tree-changes.repo.js';

export interface ResourcePermissionOptions {
  collection: string;
  resourceType: ResourceType;
  folderTypes: readonly string[];
  errors: { notFound: (message?: string) => AppError; forbidden: (message?: string) => AppError };
  /** Word used in messages, e.g. 'App'. */
  label: string;
  /**
   * Called (and awaited) after every write of this service that changes a resource document or
   * permission row of the team, failed or not: read models of the team's list bump their stamp.
   */
  onChange?: (teamId: string) => Promise<void>;
  /** Names and avatars of team members for collaborator lists (the identity module's). */
  memberProfiles: MemberProfiles;
}

export type MemberProfiles = (teamId: string, tmbIds: string[]) => Promise<Map<string, { name: string; avatar: string; active: boolean }>>;

/** The caller fields the rules need; AuthContext satisfies it. */
export interface PermissionCaller {
  teamId: string;
  tmbId: string;
  role: string;
  teamPermission: number;
  isRoot: boolean;
}

/** What a team read model holds for judging: every resource of the team by id, and its permission rows (member → resource → value). */
export interface TeamPermissionView<D extends ResourceDoc = ResourceDoc> {
  byId: ReadonlyMap<string, { doc: D }>;
  rows: ReadonlyMap<string, ReadonlyMap<string, number>>;
}

export interface Authorized<D extends ResourceDoc = ResourceDoc> {
  doc: D;
  permission: SerializedPermission;
  defaultPermission: number;
}

export function callerOf(auth: PermissionCaller): Caller {
  return { tmbId: auth.tmbId, isTeamOwner: auth.role === 'owner' || auth.teamPermission === PermissionValue.owner, isRoot: auth.isRoot };
}

/** The caller's team permission allows `required` (root and team owners hold every bit). */
export function hasTeamPermission(auth: PermissionCaller, required: RequiredPermission): boolean {
  return auth.isRoot || hasPermission(makeTeamPermission(auth.teamPermission, auth.role === 'owner'), required);
}

/**
 * The permission part of an update, checked before the update writes anything: a default
 * permission a client may assign, and not in the same request as a move (each is judged on the
 * state the other changes: a move replaces an inheriting folder's permissions, and may take the
 * caller's manage with it). Clients send the two as separate requests.
 */
export function assertPermissionUpdate(doc: Pick<ResourceDoc, 'parentId' | 'defaultPermission'>, update: { parentId?: string | null; defaultPermission?: number }): void {
  if (update.defaultPermission === undefined) return;
  if (!isAssignablePermission(update.defaultPermission)) throw Errors.missingParams(`Invalid field 'defaultPermission': must be one of 0, 4, 6, 7`);
  const moves = update.parentId !== undefined && update.parentId !== (doc.parentId || null);
  if (moves && update.defaultPermission !== (doc.defaultPermission ?? 0)) {
    throw Errors.missingParams(`Invalid field 'defaultPermission': move (parentId) and change the default permission in two requests`);
  }
}

/** Refuses (403 unAuthTeam) a caller whose team permission does not allow `required`. */
export function assertTeamPermission(auth: PermissionCaller, required: 'read' | 'write' | 'manage'): void {
  if (!hasTeamPermission(auth, required)) throw Errors.unAuthTeam(`Team ${required} permission is required`);
}

const ONLY_OWNER_CHANGES_MANAGERS = 'Only the owner can change a member who manages this resource';
const isOwnerPermission = (permission: SerializedPermission) => permission.isOwner || permission.value === PermissionValue.owner;

export function createResourcePermissionService(db: Db, options: ResourcePermissionOptions) {
  const rows = createResourcePermissionsRepo(db, options.resourceType);
  const treeRepo = createResourceTreeRepo(db, options.collection, options.folderTypes);
  const writer = createPermissionWriter({
    rows,
    tree: treeRepo,
    changes: createTreeChangesRepo(db, options.resourceType),
    onChange: options.onChange,
    now: () => new Date(),
  });
  const { apply, changing } = writer;
  // Everyone who takes the tree lock (moves, creates into folders, deletes) first finishes what
  // an interrupted permission change left (permission-writes.ts).
  const tree: ResourceTreeRepo = { ...treeRepo, withTeamLock: writer.withTeamLock };
  const isFolderType = (type: string) => options.folderTypes.includes(type);
  const toResource = (doc: ResourceDoc): PermissionResource => ({
    id: doc._id,
    parentId: doc.parentId || null,
    isFolder: isFolderType(doc.type),
    inheritPermission: doc.inheritPermission !== false,
    defaultPermission: doc.defaultPermission ?? 0,
    ownerTmbId: doc.tmbId,
  });

  async function parentPermissions(teamId: string, parentId: string | null): Promise<ParentPermissions | null> {
    if (!parentId) return null;
    const [parent] = await tree.findInTeam(teamId, [parentId]);
    if (!parent) return null;
    return { id: parentId, defaultPermission: parent.defaultPermission ?? 0, collaborators: await rows.listByResource(teamId, parentId), ownerTmbId: parent.tmbId };
  }

  /** The folder an inheriting plain resource follows live (its permission is judged there too). */
  function inheritedParentId(doc: ResourceDoc): string | null {
    const resource = toResource(doc);
    return resource.parentId && !resource.isFolder && resource.inheritPermission ? resource.parentId : null;
  }

  const service = {
    toResource,
    isFolderType,
    rows,
    tree,

    /**
     * Judges the caller on the resource and the folder it inherits from, read from the database.
     * `load`: how to read them instead (fields of the caller's team that the caller needs back,
     * say the app list's); a resource it does not find is read from the tree for its exact error.
     */
    async authorize<D extends ResourceDoc = ResourceDoc>(
      auth: PermissionCaller,
      id: unknown,
      required: RequiredPermission,
      field = 'id',
      load?: (ids: string[]) => Promise<D[]>,
    ): Promise<Authorized<D>> {
      const hexId = requireHexId(id, field);
      const doc = (load ? (await load([hexId]))[0] : undefined) ?? ((await tree.findById(hexId)) as D | null);
      if (!doc) throw options.errors.notFound(`${options.label} ${id} not found`);
      if (doc.teamId !== auth.teamId) throw options.errors.forbidden(`${options.label} ${id} belongs to another team`);
      const parentId = inheritedParentId(doc);
      const parent = parentId ? (load ? await load([parentId]) : ((await tree.findInTeam(auth.teamId, [parentId])) as D[]))[0] : undefined;
      const own = await rows.memberRows(auth.teamId, auth.tmbId, parent ? [doc._id, parentId as string] : [doc._id]);
      return service.judge(auth, doc, () => parent, (x) => own.get(x), required);
    },

    /**
     * `authorize` judged on a team view held in memory (a read model's documents and permission
     * rows, as of its version stamp, which every write of either bumps): the same rules and errors,
     * no database read. An id the view lacks (malformed, unknown, another team's) goes to
     * `authorize`, which answers it with its exact error.
     */
    async authorizeIn<D extends ResourceDoc>(view: TeamPermissionView<D>, auth: PermissionCaller, id: unknown, required: RequiredPermission, field = 'id'): Promise<Authorized<D>> {
      const held = typeof id === 'string' ? view.byId.get(id) : undefined;
      if (!held) return service.authorize<D>(auth, id, required, field);
      const own = view.rows.get(auth.tmbId);
      return service.judge(auth, held.doc, (parentId) => view.byId.get(parentId)?.doc, (resourceId) => own?.get(resourceId), required);
    },

    judge<D extends ResourceDoc>(
      auth: PermissionCaller,
      doc: D,
      parentOf: (id: string) => ResourceDoc | undefined,
      rowOf: (resourceId: string) => number | undefined,
      required: RequiredPermission,
    ): Authorized<D> {
      const resource = toResource(doc);
      const parentId = inheritedParentId(doc);
      const parentDoc = parentId ? parentOf(parentId) : undefined;
      const resolved = resolvePermission(resource, parentDoc ? toResource(parentDoc) : null, callerOf(auth), rowOf, required);
      if (!resolved.granted) {
        const where = resolved.refusedAt ? ` (refused by its folder ${resolved.refusedAt})` : '';
        throw options.errors.forbidden(`${required} permission on ${options.label.toLowerCase()} ${resource.id} is required${where}`);
      }
      return { doc, permission: resolved.permission, defaultPermission: resolved.defaultPermission };
    },

    /** `known` may carry already loaded parents (e.g. the listed folder) to save reads. */
    async resolveMany(auth: PermissionCaller, docs: ResourceDoc[], known: ResourceDoc[] = []): Promise<Map<string, { permission: SerializedPermission; defaultPermission: number }>> {
      const resources = docs.map(toResource);
      const byId = new Map([...known.map(toResource), ...resources].map((r) => [r.id, r]));
      const missingParents = [...new Set(resources.filter((r) => !r.isFolder && r.inheritPermission && r.parentId && !byId.has(r.parentId)).map((r) => r.parentId as string))];
      for (const parent of await tree.findInTeam(auth.teamId, missingParents)) byId.set(parent._id, toResource(parent));
      const own = await rows.memberRows(auth.teamId, auth.tmbId);
      const caller = callerOf(auth);
      const out = new Map<string, { permission: SerializedPermission; defaultPermission: number }>();
      for (const resource of resources) {
        out.set(resource.id, service.resolveLoaded(caller, resource, (id) => byId.get(id), (id) => own.get(id)));
      }
      return out;
    },

    /** The rule of `resolveMany` on resources already in memory (read models); `resourceOf` finds parents. */
    resolveLoaded(
      caller: Caller,
      resource: PermissionResource,
      resourceOf: (id: string) => PermissionResource | undefined,
      rowOf: (resourceId: string) => number | undefined,
    ): { permission: SerializedPermission; defaultPermission: number } {
      const parent = resource.parentId ? (resourceOf(resource.parentId) ?? null) : null;
      const { permission, defaultPermission } = resolvePermission(resource, parent, caller, rowOf);
      return { permission, defaultPermission };
    },

    /** `ownerTmbId`: the new resource's owner; without it a folder made by the parent's owner gets a redundant row for them. */
    async initialFor(teamId: string, isFolder: boolean, parentId: string | null, ownerTmbId?: string): Promise<{ defaultPermission: number; collaborators: Collaborator[] }> {
      return initialPermissions(isFolder, isFolder ? await parentPermissions(teamId, parentId) : null, ownerTmbId);
    },

    async writeCollaborators(teamId: string, resourceId: string, collaborators: Collaborator[]): Promise<void> {
      await changing(teamId, () => rows.replace(teamId, [resourceId], collaborators));
    },

    async changeDefaultPermission(auth: PermissionCaller, doc: ResourceDoc, newDefault: number): Promise<void> {
      if (!isAssignablePermission(newDefault)) throw Errors.missingParams(`Invalid field 'defaultPermission': must be one of 0, 4, 6, 7`);
      await tree.withTeamLock(auth.teamId, async (lock) => {
        const { doc: fresh } = await service.authorize(auth, doc._id, 'manage', `${options.resourceType}Id`);
        const resource = toResource(fresh);
        const parent = await parentPermissions(auth.teamId, resource.parentId);
        const currentDefault = !resource.isFolder && resource.inheritPermission && parent ? parent.defaultPermission : resource.defaultPermission;
        const writes = changeDefaultPermission({ resource, currentDefault, newDefault, parent, tree: await tree.folderTree(auth.teamId) });
        await apply(lock, auth.teamId, writes);
      });
    },

    async move(auth: PermissionCaller, doc: ResourceDoc, targetId: string | null): Promise<void> {
      await tree.withTeamLock(auth.teamId, async (lock) => {
        const id = doc._id;
        // A move changes who can reach the resource (a folder's owner owns what inherits from
        // it), so write is not enough on either side; judged under the lock, on fresh documents.
        const { doc: fresh } = await service.authorize(auth, id, 'manage', `${options.resourceType}Id`);
        if (targetId !== null) {
          const target = await service.authorize(auth, targetId, 'manage', 'parentId');
          if (!isFolderType(target.doc.type)) throw Errors.missingParams(`Invalid field 'parentId': ${targetId} is not a folder`);
        } else if (!hasTeamPermission(auth, 'manage')) {
          throw Errors.unAuthTeam(`Team manage permission is required to move ${options.label.toLowerCase()} ${id} to the root`);
        }
        const folders = await tree.folderTree(auth.teamId);
        const parentOf = new Map(folders.map((f) => [f.id, f.parentId]));
        if (wouldCreateCycle(id, targetId, (x) => parentOf.get(x))) {
          throw Errors.missingParams(`Invalid field 'parentId': cannot move ${options.label.toLowerCase()} ${id} into itself or its own subfolder`);
        }
        const resource = toResource(fresh);
        const writes = move({ resource, target: await parentPermissions(auth.teamId, targetId), tree: folders });
        if (!(await apply(lock, auth.teamId, writes, resource.parentId))) throw Errors.conflict(`${options.label} ${id} was moved concurrently, try again`);
      });
    },

    async resumeInheritance(auth: PermissionCaller, doc: ResourceDoc): Promise<void> {
      await tree.withTeamLock(auth.teamId, async (lock) => {
        const { doc: fresh, permission } = await service.authorize(auth, doc._id, 'manage', `${options.resourceType}Id`);
        const resource = toResource(fresh);
        const parent = await parentPermissions(auth.teamId, resource.parentId);
        // Resuming replaces the resource's own rows: the collaborator routes' owner-only rule for managers holds here too.
        if (!isOwnerPermission(permission) && managersLostByResume({ resource, own: await rows.listByResource(auth.teamId, resource.id), parent }).length > 0) {
          throw options.errors.forbidden(ONLY_OWNER_CHANGES_MANAGERS);
        }
        await apply(lock, auth.teamId, resumeInheritance({ resource, parent, tree: await tree.folderTree(auth.teamId) }));
      });
    },

    async listCollaborators(teamId: string, doc: ResourceDoc) {
      const resource = toResource(doc);
      const live = !resource.isFolder && resource.inheritPermission && resource.parentId;
      const list = live ? ((await parentPermissions(teamId, resource.parentId))?.collaborators ?? []) : await rows.listByResource(teamId, resource.id);
      const profiles = await options.memberProfiles(teamId, list.map((c) => c.tmbId));
      return list
        .filter((c) => profiles.get(c.tmbId)?.active !== false)
        .map((c) => ({
          teamId,
          tmbId: c.tmbId,
          permission: makePermission(c.permission, c.tmbId === resource.ownerTmbId),
          name: profiles.get(c.tmbId)?.name ?? '',
          avatar: profiles.get(c.tmbId)?.avatar ?? '',
        }));
    },

    async updateCollaborators(auth: PermissionCaller, doc: ResourceDoc, tmbIds: string[], permission: number): Promise<void> {
      if (!isAssignablePermission(permission)) throw Errors.missingParams(`Invalid field 'permission': must be one of 0, 4, 6, 7`);
      await changeMembers(auth, doc, tmbIds, 'tmbIds', (resource, own, parent, folders) =>
        changeCollaborators({ resource, own, parent, upserts: tmbIds.map((tmbId) => ({ tmbId, permission })), tree: folders }),
      );
    },

    async deleteCollaborator(auth: PermissionCaller, doc: ResourceDoc, tmbId: string): Promise<void> {
      await changeMembers(auth, doc, [tmbId], 'tmbId', (resource, own, parent, folders) => changeCollaborators({ resource, own, parent, removals: [tmbId], tree: folders }));
    },

    async deleteAllFor(teamId: string, ids: string[]): Promise<void> {
      await changing(teamId, () => rows.deleteForResources(teamId, ids));
    },

    /** Finishes permission changes a crash or a database error interrupted (start-up, sweeps). */
    finishInterrupted: writer.finishInterrupted,
  };

  async function changeMembers(
    auth: PermissionCaller,
    doc: ResourceDoc,
    tmbIds: string[],
    /** The request field that named them, for the 400 of a non-member. */
    field: 'tmbId' | 'tmbIds',
    plan: (resource: PermissionResource, own: Collaborator[], parent: ParentPermissions | null, folders: Awaited<ReturnType<typeof tree.folderTree>>) => InheritanceWrite[],
  ): Promise<void> {
    const id = doc._id;
    await service.authorize(auth, id, 'manage', `${options.resourceType}Id`);
    if (tmbIds.includes(auth.tmbId)) throw Errors.forbidden('You cannot change your own permission');
    const profiles = await options.memberProfiles(auth.teamId, tmbIds);
    const unknown = tmbIds.find((t) => !profiles.get(t)?.active);
    if (unknown) throw Errors.missingParams(`Invalid field '${field}': ${unknown} is not a member of this team`);
    await tree.withTeamLock(auth.teamId, async (lock) => {
      // Judged again under the lock, on the fresh document, as the other changes are: a resource
      // deleted (or moved out of reach) since the check above gets no rows (404 / 403).
      const { doc: fresh, permission: current } = await service.authorize(auth, id, 'manage', `${options.resourceType}Id`);
      const resource = toResource(fresh);
      const parent = await parentPermissions(auth.teamId, resource.parentId);
      const own = await rows.listByResource(auth.teamId, id);
      // Only an owner may change someone who manages the resource (the reference UI rule).
      // A plain resource following its folder live: the folder's owner manages it too.
      const granted = new Map((!resource.isFolder && resource.inheritPermission && parent ? effectiveParentRows(resource, parent) : own).map((c) => [c.tmbId, c.permission]));
      if (!isOwnerPermission(current) && tmbIds.some((t) => (granted.get(t) ?? 0) === PermissionValue.manage)) {
        throw options.errors.forbidden(ONLY_OWNER_CHANGES_MANAGERS);
      }
      await apply(lock, auth.teamId, plan(resource, own, parent, await tree.folderTree(auth.teamId)));
    });
  }

  return service;
}

export type ResourcePermissionService = ReturnType<typeof createResourcePermissionService>;
