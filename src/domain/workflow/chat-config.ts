/**
 * An app's chat configuration as the chat windows see it. Apps made by older editors (and
 * FastGPT's own simple templates) keep it in the inputs of the system-config node (`userGuide`)
 * instead of `chatConfig`: those values are the base, the stored chatConfig goes on top, and
 * the variables and welcome text come from the chat's snapshot, else chatConfig, else the node,
 * an empty list or text counting as absent.
 */
import type { StoreNode } from './types.js';

/** System-config node input keys → chatConfig fields. */
const LEGACY_KEYS: Record<string, string> = {
  welcomeText: 'welcomeText',
  variables: 'variables',
  questionGuide: 'questionGuide',
  tts: 'ttsConfig',
  whisper: 'whisperConfig',
  scheduleTrigger: 'scheduledTriggerConfig',
  chatInputGuide: 'chatInputGuide',
  fileSelectConfig: 'fileSelectConfig',
  instruction: 'instruction',
};

const DEFAULTS: Record<string, unknown> = {
  questionGuide: false,
  ttsConfig: { type: 'web' },
  whisperConfig: { open: false, autoSend: false, autoTTSResponse: false },
  chatInputGuide: { open: false, textList: [], customUrl: '' },
  fileSelectConfig: { canSelectFile: false, canSelectImg: false, maxFiles: 10 },
};

/** The chat settings held by the system-config node's inputs (null values left out). */
export function systemConfigValues(nodes: readonly Pick<StoreNode, 'flowNodeType' | 'inputs'>[]): Record<string, unknown> {
  const node = nodes.find((candidate) => candidate.flowNodeType === 'userGuide');
  const out: Record<string, unknown> = {};
  for (const input of node?.inputs ?? []) {
    const field = LEGACY_KEYS[input.key];
    if (field && input.value !== undefined && input.value !== null) out[field] = input.value;
  }
  return out;
}

const present = (value: unknown) => (Array.isArray(value) ? value.length > 0 : typeof value === 'string' ? value !== '' : value !== undefined && value !== null);
const firstPresent = (...values: unknown[]) => values.find(present);

export interface ResolvedChatConfig extends Record<string, unknown> {
  variables: unknown[];
  welcomeText: string;
}

export function resolveChatConfig(
  nodes: readonly Pick<StoreNode, 'flowNodeType' | 'inputs'>[],
  chatConfig: Record<string, unknown>,
  stored: { variableList?: unknown[]; welcomeText?: string } = {},
): ResolvedChatConfig {
  const legacy = systemConfigValues(nodes);
  return {
    ...DEFAULTS,
    ...legacy,
    ...chatConfig,
    variables: (firstPresent(stored.variableList, chatConfig.variables, legacy.variables) as unknown[] | undefined) ?? [],
    welcomeText: (firstPresent(stored.welcomeText, chatConfig.welcomeText, legacy.welcomeText) as string | undefined) ?? '',
  };
}
