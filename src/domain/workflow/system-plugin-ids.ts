/** Built-in system plugins as graphs name them (`community-getTime`); team apps have hex ids. */
import type { RuntimeNode } from './types.js';

/** Plugin ids with a source prefix (`community-getTime`) are system plugins. */
export const isSystemPluginId = (pluginId: string) => pluginId.includes('-');

/**
 * The system plugins that fill a template input with `{{key}}` values of their own (by the part
 * of the plugin id after its source, and the template's input keys, 4.8.10's names included).
 */
const TEMPLATE_PLUGIN_INPUTS: Readonly<Record<string, readonly string[]>> = { textEditor: ['text', '文本'], customFeedback: ['customFeedback'] };

/** The template input keys of a template system plugin's node (none for any other node). */
export function templatePluginInputs(node: Pick<RuntimeNode, 'flowNodeType' | 'pluginId'>): readonly string[] {
  const pluginId = node.pluginId;
  if (node.flowNodeType !== 'pluginModule' || !pluginId || !isSystemPluginId(pluginId)) return [];
  const name = pluginId.slice(pluginId.indexOf('-') + 1);
  return Object.hasOwn(TEMPLATE_PLUGIN_INPUTS, name) ? TEMPLATE_PLUGIN_INPUTS[name]! : [];
}
