import type { ModelCatalog, ModelRegistry } from './model-types.js';

const byModelOrName = <T extends { model: string; name: string }>(list: T[], key: string | undefined) =>
  key ? (list.find((item) => item.model === key) ?? list.find((item) => item.name === key)) : undefined;

/** Look-ups over a loaded catalogue; models are found by id (`model`) or display name. */
export function createModelRegistry(catalog: ModelCatalog): ModelRegistry {
  return {
    catalog,
    getLLMModel: (model) => byModelOrName(catalog.llmModels, model),
    getVectorModel: (model) => byModelOrName(catalog.vectorModels, model),
    getReRankModel: (model) => byModelOrName(catalog.reRankModels, model),
    defaultLLMModel: () => catalog.llmModels[0],
    defaultVectorModel: () => {
      const first = catalog.vectorModels[0];
      if (!first) throw new Error('no vector model configured');
      return first;
    },
  };
}

const blankSecrets = <T extends { requestAuth?: string }>(model: T): T => (model.requestAuth === undefined ? model : { ...model, requestAuth: '' });

/** What getInitData shows clients: every `requestAuth` blanked; rerank URLs too, as the reference. */
export function publicCatalog(catalog: ModelCatalog) {
  return {
    llmModels: catalog.llmModels.map(blankSecrets),
    vectorModels: catalog.vectorModels.map(blankSecrets),
    reRankModels: catalog.reRankModels.map((model) => ({ ...model, requestUrl: '', requestAuth: '' })),
    whisperModel: catalog.whisperModel ? blankSecrets(catalog.whisperModel) : undefined,
    audioSpeechModels: catalog.audioSpeechModels.map(blankSecrets),
  };
}
