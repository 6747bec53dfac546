/**
 * The model configuration, in the shape of the reference's config.json (llmModels,
 * vectorModels, reRankModels, audioSpeechModels, whisperModel). Plain types: the system module
 * loads it (MODEL_CONFIG_PATH, with built-in defaults); infra's provider clients take its
 * entries. `requestAuth` values are secrets.
 */
export interface LLMModel {
  model: string;
  name: string;
  maxContext: number;
  maxResponse: number;
  quoteMaxToken: number;
  maxTemperature?: number;
  charsPointsPrice?: number;
  vision?: boolean;
  datasetProcess?: boolean;
  usedInClassify?: boolean;
  usedInExtractFields?: boolean;
  usedInToolCall?: boolean;
  /** Offered by the web client's question-optimisation (query extension) picker. */
  usedInQueryExtension?: boolean;
  toolChoice?: boolean;
  functionCall?: boolean;
  defaultSystemChatPrompt?: string;
  defaultConfig?: Record<string, unknown>;
  /** OpenAI-compatible base URL for this model; OPENAI_BASE_URL when absent. */
  requestUrl?: string;
  requestAuth?: string;
}

export interface VectorModel {
  model: string;
  name: string;
  charsPointsPrice?: number;
  defaultToken: number;
  maxToken: number;
  weight?: number;
  /** 'local-lexical' runs in process with no network; 'openai' calls an /v1/embeddings endpoint. */
  provider?: 'local-lexical' | 'openai';
  dimensions?: number;
  /** Extra request body fields for every call, then for storing (`dbConfig`) or searching (`queryConfig`). */
  defaultConfig?: Record<string, unknown>;
  dbConfig?: Record<string, unknown>;
  queryConfig?: Record<string, unknown>;
  requestUrl?: string;
  requestAuth?: string;
}

export interface ReRankModel {
  model: string;
  name: string;
  charsPointsPrice?: number;
  requestUrl?: string;
  requestAuth?: string;
}

export interface AudioSpeechModel {
  model: string;
  name: string;
  charsPointsPrice?: number;
  voices?: { label: string; value: string }[];
  requestUrl?: string;
  requestAuth?: string;
}

export interface WhisperModel {
  model: string;
  name: string;
  charsPointsPrice?: number;
  requestUrl?: string;
  requestAuth?: string;
}

export interface ModelCatalog {
  llmModels: LLMModel[];
  vectorModels: VectorModel[];
  reRankModels: ReRankModel[];
  audioSpeechModels: AudioSpeechModel[];
  whisperModel?: WhisperModel;
  feConfigs: Record<string, unknown>;
  systemEnv: Record<string, unknown>;
}

/** The name of the built-in vector model (hashed word and character n-grams; lexical, not semantic). */
export const LOCAL_LEXICAL_VECTOR_MODEL = 'local-lexical-v1';

export interface ModelRegistry {
  catalog: ModelCatalog;
  getLLMModel(model?: string): LLMModel | undefined;
  getVectorModel(model?: string): VectorModel | undefined;
  getReRankModel(model?: string): ReRankModel | undefined;
  defaultLLMModel(): LLMModel | undefined;
  defaultVectorModel(): VectorModel;
  /** The named language model, else the default one (a name this deployment lacks falls back too). */
  llmModelOrDefault(model?: unknown): LLMModel | undefined;
  /** The named vector model, else the default one. */
  vectorModelOrDefault(model?: unknown): VectorModel;
}
