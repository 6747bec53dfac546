import type { FastifyInstance } from 'fastify';
import { nestsDeeperThan } from '../../infra/input-guard.js';
import { Errors } from '../../infra/errors.js';
import { type SafeFetchOptions, safeFetch } from '../../infra/outbound-fetch.js';
import type { AuthContext } from '../auth/types.js';
import { definePlatformRoute } from '../define-route.js';
import { httpPluginCreateInput, httpPluginUpdateInput, schemaUrlInput } from './apps.schema.js';
import type { AppRoom, AppsCore, AppsDeps } from './apps.service.js';
import { type GeneratedPlugin, generatePlugins, parseApiSchema, parseCustomHeaders } from './openapi-plugins.js';

const tags = ['http plugins'];
/** How deep a fetched OpenAPI document may nest (real documents stay far below; JSON writers recurse). */
const MAX_SCHEMA_DEPTH = 256;

export function registerHttpPluginRoutes(app: FastifyInstance, core: AppsCore, deps: AppsDeps, fetchOptions: SafeFetchOptions): void {
  const session = ['session'] as const;

  const createChild = (auth: AuthContext, parentId: string, plugin: GeneratedPlugin, ownerTmbId: string, room: AppRoom) =>
    core.insertApp(
      auth,
      { parentId, type: 'plugin', tmbId: ownerTmbId, name: plugin.name, intro: plugin.intro, avatar: plugin.avatar, modules: plugin.modules, edges: plugin.edges, pluginData: { pluginUniId: plugin.name } },
      room,
    );

  definePlatformRoute(app, {
    methods: ['POST'],
    url: '/core/app/httpPlugin/create',
    auth: session,
    input: httpPluginCreateInput,
    summary: 'Create an HTTP plugin and one child plugin per operation of its OpenAPI schema',
    tags,
    handler: async ({ input, auth }) => {
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
          await core.deleteTree(auth.teamId, id, room).catch(() => undefined);
          throw error;
        }
      });
      return {};
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'PUT'],
    url: '/core/app/httpPlugin/update',
    auth: session,
    input: httpPluginUpdateInput,
    summary: 'Update an HTTP plugin; children are reconciled with the new schema',
    tags,
    handler: async ({ input, auth }) => {
      const { app: current } = await core.authorizeWrite(auth, input.appId, 'manage');
      if (current.type !== 'httpPlugin') throw Errors.invalidAppType(`App ${input.appId} is a ${current.type}, not an HTTP plugin`);
      const next = { apiSchemaStr: input.pluginData.apiSchemaStr ?? '', customHeaders: input.pluginData.customHeaders ?? '' };
      const changed = next.apiSchemaStr !== (current.pluginData?.apiSchemaStr ?? '') || next.customHeaders !== (current.pluginData?.customHeaders ?? '');
      parseCustomHeaders(next.customHeaders);
      if (changed && next.apiSchemaStr.trim()) {
        const plugins = generatePlugins(next.apiSchemaStr, next.customHeaders);
        // Only the generated plugins (they carry the operation they came from) are reconciled: a
        // plugin someone moved into the container stays, whatever its name (deleting it would be
        // an owner's act, done here with manage on the container).
        const children = (await deps.apps.children(auth.teamId, input.appId)).filter((c) => c.type === 'plugin' && c.pluginData?.pluginUniId);
        const wanted = new Map(plugins.map((p) => [p.name, p]));
        const existing = new Map(children.map((c) => [c.pluginData?.pluginUniId as string, c]));
        const added = plugins.filter((p) => !existing.has(p.name));
        const removed = children.filter((c) => !wanted.has(c.pluginData?.pluginUniId as string));
        // Room for the difference only: what the removed children free is reused by the added ones.
        await core.withAppRoom(auth.teamId, Math.max(0, added.length - removed.length), async (room) => {
          for (const child of removed) await core.deleteTree(auth.teamId, child._id, room);
          for (const plugin of added) await createChild(auth, input.appId, plugin, current.tmbId, room);
        });
        // Every child of a kept operation, not one per id: a copy of a child keeps its id.
        for (const child of children) {
          const plugin = wanted.get(child.pluginData?.pluginUniId as string);
          if (!plugin) continue;
          await deps.apps.update(auth.teamId, child._id, {
            name: plugin.name,
            intro: plugin.intro,
            avatar: plugin.avatar,
            type: 'plugin',
            version: 'v2',
            modulesJson: JSON.stringify(plugin.modules),
            edgesJson: JSON.stringify(plugin.edges),
            pluginData: { ...child.pluginData, pluginUniId: plugin.name },
          });
        }
      }
      await deps.apps.update(auth.teamId, input.appId, {
        name: input.name,
        ...(input.avatar ? { avatar: input.avatar } : {}),
        ...(input.intro !== undefined ? { intro: input.intro } : {}),
        pluginData: { ...current.pluginData, ...next },
      });
      return null;
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/httpPlugin/getApiSchemaByUrl',
    auth: session,
    input: schemaUrlInput,
    summary: 'Fetch an OpenAPI document by URL (SSRF-guarded, timeout and size cap)',
    tags,
    handler: async ({ input }) => {
      const response = await safeFetch(input.url, { ...fetchOptions, headers: { accept: 'application/json, application/yaml, text/yaml, */*' } });
      if (response.status >= 400) throw Errors.badGateway(`Fetching the schema failed with HTTP ${response.status}`);
      // The client gets YAML's numbers and booleans back as such.
      const doc = parseApiSchema(response.text(), 'core');
      // The document goes back as JSON: one nested past what a serialiser walks is refused, not a 500.
      if (nestsDeeperThan(doc, MAX_SCHEMA_DEPTH)) throw Errors.missingParams(`Invalid field 'url': the document nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
      return doc;
    },
  });
}
