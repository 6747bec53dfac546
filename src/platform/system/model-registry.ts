import { LOCAL_LEXICAL_MODEL } from './model-config.js';
import type { ModelCatalog, ModelRegistry } from '../../domain/models.js';

const byModelOrName = <T extends { model: string; name: string }>(list: T[], key: string | undefined) =>
  key ? (list.find((item) => item.model === key) ?? list.find((item) => item.name === key)) : undefined;

/** Look-ups over a loaded catalogue; models are found by id (`model`) or display name. */
export function createModelRegistry(catalog: ModelCatalog): ModelRegistry {
  const registry: ModelRegistry = {
    catalog,
    getLLMModel: (model) => byModelOrName(catalog.llmModels, model),
    getVectorModel: (model) => byModelOrName(catalog.vectorModels, model),
    getReRankModel: (model) => byModelOrName(catalog.reRankModels, model),
    defaultLLMModel: () => catalog.llmModels[0],
    // loadModelCatalog always lists the local model: the fallback is for the type only.
    defaultVectorModel: () => catalog.vectorModels[0] ?? LOCAL_LEXICAL_MODEL,
    llmModelOrDefault: (model) => registry.getLLMModel(typeof model === 'string' ? model : undefined) ?? registry.defaultLLMModel(),
    vectorModelOrDefault: (model) => registry.getVectorModel(typeof model === 'string' ? model : undefined) ?? registry.defaultVectorModel(),
  };
  return registry;
}

/** A model without where and how it is called: the key, and the address (an internal gateway is nobody's business). */
const blankSecrets = <T extends { requestUrl?: string; requestAuth?: string }>(model: T): T =>
  model.requestAuth === undefined && model.requestUrl === undefined ? model : { ...model, requestUrl: '', requestAuth: '' };

/**
 * What getInitData shows clients, who may be anonymous: every `requestAuth` and `requestUrl`
 * blanked (the reference blanks the rerank models' only; the web client uses neither).
 */
export function publicCatalog(catalog: ModelCatalog) {
  return {
    llmModels: catalog.llmModels.map(blankSecrets),
    vectorModels: catalog.vectorModels.map(blankSecrets),
    reRankModels: catalog.reRankModels.map(blankSecrets),
    whisperModel: catalog.whisperModel ? blankSecrets(catalog.whisperModel) : undefined,
    audioSpeechModels: catalog.audioSpeechModels.map(blankSecrets),
  };
}
