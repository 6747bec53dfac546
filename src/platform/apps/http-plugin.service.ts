import type { z } from 'zod';
import { describeError } from '../../infra/database-errors.js';
import { Errors } from '../../infra/errors.js';
import type { LockHold } from '../../infra/mongo-lock.js';
import type { AuthContext } from '../auth/types.js';
import type { App } from './apps.repo.js';
import type { httpPluginCreateInput, httpPluginUpdateInput } from './apps.schema.js';
import type { AppRoom, AppsCore, AppsDeps } from './apps.service.js';
import { type GeneratedPlugin, generatePlugins, parseCustomHeaders } from './openapi-plugins.js';

/** HTTP plugins: a container app and one child plugin per operation of its OpenAPI schema. */
export function createHttpPluginService(core: AppsCore, deps: AppsDeps) {
  const createChild = (auth: AuthContext, parentId: string, plugin: GeneratedPlugin, ownerTmbId: string, room: AppRoom) =>
    core.insertApp(
      auth,
      { parentId, type: 'plugin', tmbId: ownerTmbId, name: plugin.name, intro: plugin.intro, avatar: plugin.avatar, modules: plugin.modules, edges: plugin.edges, pluginData: { pluginUniId: plugin.name } },
      room,
    );

  /**
   * Makes the container's generated children match `plugins`. Only the generated plugins (they
   * carry the operation they came from) are reconciled: a plugin someone moved into the container
   * stays, whatever its name (deleting it would be an owner's act, done here with manage on it).
   */
  async function reconcileChildren(auth: AuthContext, lock: LockHold, container: App, plugins: GeneratedPlugin[]): Promise<void> {
    const children = (await deps.apps.children(auth.teamId, container._id)).filter((c) => c.type === 'plugin' && c.pluginData?.pluginUniId);
    const wanted = new Map(plugins.map((p) => [p.name, p]));
    const existing = new Map(children.map((c) => [c.pluginData?.pluginUniId as string, c]));
    const added = plugins.filter((p) => !existing.has(p.name));
    const removed = children.filter((c) => !wanted.has(c.pluginData?.pluginUniId as string));
    // Room for the difference only: what the removed children free is reused by the added ones.
    await core.withAppRoom(auth.teamId, Math.max(0, added.length - removed.length), async (room) => {
      for (const child of removed) {
        lock.assertHeld();
        await core.deleteTree(auth.teamId, child._id, room);
      }
      for (const plugin of added) {
        lock.assertHeld();
        await createChild(auth, container._id, plugin, container.tmbId, room);
      }
    });
    // Every child of a kept operation, not one per id: a copy of a child keeps its id. Its
    // pluginData stays as stored (its operation is the same; a publish may have moved nodeVersion).
    for (const child of children) {
      const plugin = wanted.get(child.pluginData?.pluginUniId as string);
      if (!plugin) continue;
      lock.assertHeld();
      await deps.apps.update(auth.teamId, child._id, {
        name: plugin.name,
        intro: plugin.intro,
        avatar: plugin.avatar,
        version: 'v2',
        modulesJson: JSON.stringify(plugin.modules),
        edgesJson: JSON.stringify(plugin.edges),
      });
    }
  }

  return {
    async create(auth: AuthContext, input: z.output<typeof httpPluginCreateInput>): Promise<void> {
      await core.assertMayCreateIn(auth, input.parentId);
      // Parse first: an invalid schema creates nothing.
      const plugins = input.pluginData.apiSchemaStr?.trim() ? generatePlugins(input.pluginData.apiSchemaStr, input.pluginData.customHeaders) : [];
      parseCustomHeaders(input.pluginData.customHeaders);
      // The container does not count toward the plan limit; each child plugin does.
      await core.withAppRoom(auth.teamId, plugins.length, async (room) => {
        const id = await core.insertApp(auth, {
          parentId: input.parentId ?? null,
          type: 'httpPlugin',
          name: input.name,
          avatar: input.avatar,
          intro: input.intro,
          pluginData: { apiSchemaStr: input.pluginData.apiSchemaStr ?? '', customHeaders: input.pluginData.customHeaders ?? '' },
        });
        try {
          for (const plugin of plugins) await createChild(auth, id, plugin, auth.tmbId, room);
        } catch (error) {
          // A failed child takes the plugin back whole (its room with it): a retry then makes one
          // plugin, not a second container beside a broken one. A crash here is docs/apps.md's gap.
          await core.deleteTree(auth.teamId, id, room).catch((undo: unknown) => {
            deps.log.warn(`HTTP plugin ${id} of team ${auth.teamId} created before a failure and kept: ${describeError(undo)}`);
          });
          throw error;
        }
      });
    },

    /**
     * Saves the container and, when its schema or headers changed, reconciles its children.
     * Alone among the container's changes, judged on the container as read under the lock:
     * parallel saves of one schema change add each new operation once.
     */
    async update(auth: AuthContext, input: z.output<typeof httpPluginUpdateInput>): Promise<void> {
      const { app: viewed } = await core.view(auth, input.appId, 'manage');
      if (viewed.type !== 'httpPlugin') throw Errors.invalidAppType(`App ${input.appId} is a ${viewed.type}, not an HTTP plugin`);
      const next = { apiSchemaStr: input.pluginData.apiSchemaStr ?? '', customHeaders: input.pluginData.customHeaders ?? '' };
      parseCustomHeaders(next.customHeaders);
      await core.withAppLock(auth, input.appId, 'manage', async (current, lock) => {
        const changed = next.apiSchemaStr !== (current.pluginData?.apiSchemaStr ?? '') || next.customHeaders !== (current.pluginData?.customHeaders ?? '');
        if (changed && next.apiSchemaStr.trim()) await reconcileChildren(auth, lock, current, generatePlugins(next.apiSchemaStr, next.customHeaders));
        lock.assertHeld();
        await deps.apps.update(auth.teamId, input.appId, {
          name: input.name,
          ...(input.avatar ? { avatar: input.avatar } : {}),
          ...(input.intro !== undefined ? { intro: input.intro } : {}),
          pluginData: { ...current.pluginData, ...next },
        });
      });
    },
  };
}
