import type { FastifyInstance } from 'fastify';
import { Errors } from '../../../infra/errors.js';
import { escapeRegex } from '../../../infra/mongo.js';
import { ALPHANUMERIC, randomString } from '../../../infra/random-string.js';
import { definePlatformRoute } from '../../define-route.js';
import { pluginPathInput, previewNodeInput, systemPluginListInput } from '../apps.schema.js';
import type { AppsCore } from '../apps.service.js';
import type { LatestVersionReader } from '../versions.service.js';
import { findSystemPlugin, SYSTEM_PLUGINS, type SystemPlugin } from './registry.js';

const tags = ['app plugins'];
const nodeId = () => randomString(ALPHANUMERIC, 12);
const handles = { top: true, right: true, bottom: true, left: true };
type Json = Record<string, unknown>;

function listItem(plugin: SystemPlugin) {
  return {
    id: plugin.id,
    isFolder: false,
    parentId: null,
    templateType: plugin.templateType,
    flowNodeType: 'pluginModule',
    avatar: plugin.avatar,
    name: plugin.name,
    intro: plugin.intro,
    isTool: plugin.isTool,
    currentCost: 0,
    author: plugin.author,
  };
}

function systemPreview(plugin: SystemPlugin) {
  return {
    id: nodeId(),
    pluginId: plugin.id,
    templateType: plugin.templateType,
    flowNodeType: 'pluginModule',
    avatar: plugin.avatar,
    name: plugin.name,
    intro: plugin.intro,
    inputExplanationUrl: '',
    showStatus: true,
    isTool: plugin.isTool,
    version: '481',
    sourceHandle: handles,
    targetHandle: handles,
    inputs: plugin.inputs.map((i) => ({
      key: i.key,
      label: i.label,
      valueType: i.valueType,
      description: i.description,
      toolDescription: i.description,
      required: i.required ?? false,
      renderTypeList: ['reference', 'input'],
      value: i.defaultValue,
      canEdit: false,
    })),
    outputs: plugin.outputs.map((o) => ({ id: o.key, key: o.key, type: 'static', valueType: o.valueType, label: o.label, description: o.description })),
  };
}

const inputsOf = (node: Json | undefined) => (Array.isArray(node?.inputs) ? (node.inputs as Json[]) : []);

export function registerSystemPluginRoutes(app: FastifyInstance, core: AppsCore, latestVersion: LatestVersionReader): void {
  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/core/app/plugin/getSystemPluginTemplates',
    auth: ['session'],
    input: systemPluginListInput,
    summary: 'Built-in system plugins (search by name/intro, or by parent folder)',
    tags,
    handler: async ({ input }) => {
      const offered = SYSTEM_PLUGINS.filter((p) => !p.unlisted);
      const search = input.searchKey?.trim();
      if (search) {
        const re = new RegExp(escapeRegex(search), 'i');
        return offered.filter((p) => re.test(p.name) || re.test(p.intro)).map(listItem);
      }
      return input.parentId ? [] : offered.map(listItem);
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/plugin/path',
    auth: ['session'],
    input: pluginPathInput,
    summary: 'Path of a system plugin folder (one level)',
    tags,
    handler: async ({ input }) => {
      const plugin = input.parentId ? SYSTEM_PLUGINS.find((p) => p.id === input.parentId) : undefined;
      return plugin ? [{ parentId: plugin.id, parentName: plugin.name }] : [];
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/core/app/plugin/getPreviewNode',
    auth: ['session'],
    input: previewNodeInput,
    summary: 'Node template for a team app/plugin or a system plugin',
    tags,
    handler: async ({ input, auth }) => {
      if (input.appId.includes('-')) {
        const plugin = findSystemPlugin(input.appId);
        if (!plugin) throw Errors.pluginUnExist(`Plugin ${input.appId} not found`);
        return systemPreview(plugin);
      }
      const { app: found } = await core.view(auth, input.appId, 'read');
      if (found.type === 'folder' || found.type === 'httpPlugin') throw Errors.invalidAppType(`App ${input.appId} is a ${found.type}; it cannot be a node`);
      const { nodes, chatConfig } = await latestVersion(found);
      const pluginInput = nodes.find((n) => n.flowNodeType === 'pluginInput');
      const pluginOutput = nodes.find((n) => n.flowNodeType === 'pluginOutput');
      const isPlugin = Boolean(pluginInput);
      const variables = Array.isArray(chatConfig.variables) ? (chatConfig.variables as Json[]) : [];
      return {
        id: nodeId(),
        pluginId: input.appId,
        templateType: 'teamApp',
        flowNodeType: isPlugin ? 'pluginModule' : 'appModule',
        avatar: found.avatar,
        name: found.name,
        intro: found.intro,
        inputExplanationUrl: '',
        showStatus: true,
        isTool: found.type === 'plugin',
        version: found.pluginData?.nodeVersion ?? '481',
        sourceHandle: handles,
        targetHandle: handles,
        inputs: isPlugin
          ? inputsOf(pluginInput).map((i) => ({ ...i, value: i.value ?? i.defaultValue, canEdit: false }))
          : [
              { key: 'history', renderTypeList: ['numberInput', 'reference'], valueType: 'chatHistory', label: 'history', required: true, min: 0, max: 50, value: 6 },
              { key: 'userChatInput', renderTypeList: ['reference', 'textarea'], valueType: 'string', label: 'userChatInput', required: true, toolDescription: 'User question' },
              ...variables.map((v) => ({ key: v.key, label: v.label ?? v.key, valueType: v.valueType ?? 'string', renderTypeList: ['reference', 'input'], required: v.required ?? false, canEdit: false })),
            ],
        outputs: isPlugin
          ? inputsOf(pluginOutput).map((o) => ({ id: o.key, key: o.key, type: 'static', valueType: o.valueType, label: o.label || o.key, description: o.description }))
          : [
              { id: 'history', key: 'history', type: 'static', valueType: 'chatHistory', label: 'history' },
              { id: 'answerText', key: 'answerText', type: 'static', valueType: 'string', label: 'answerText' },
            ],
      };
    },
  });
}
