import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { type Config, ConfigError } from '../../config.js';
import { LOCAL_LEXICAL_VECTOR_MODEL, type ModelCatalog, type VectorModel } from '../../domain/models.js';

/** Removes `//` and `/* *\/` comments outside strings (the reference reads config.json as JSON5). */
export function stripJsonComments(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i] as string;
    const next = text[i + 1];
    if (inString) {
      out += char;
      if (char === '\\') out += text[++i] ?? '';
      else if (char === '"') inString = false;
    } else if (char === '"') {
      inString = true;
      out += char;
    } else if (char === '/' && next === '/') {
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
    } else if (char === '/' && next === '*') {
      i += 2;
      while (i < text.length && !(text[i] === '*' && text[i + 1] === '/')) i++;
      i++;
    } else {
      out += char;
    }
  }
  // Trailing commas are common in hand-written JSON5 files.
  return out.replace(/,(\s*[}\]])/g, '$1');
}

const named = { model: z.string().min(1), name: z.string().min(1) };
// Extra request body fields are spread into provider requests: objects only.
const extraBody = z.record(z.string(), z.unknown()).optional();
const fileSchema = z.looseObject({
  feConfigs: z.record(z.string(), z.unknown()).optional(),
  systemEnv: z
    .looseObject({
      // Keys are read back as `<prefix>-<secret>` (authenticator.ts parseApiKeyCredential): a '-' in it breaks every key.
      openapiPrefix: z
        .string()
        .regex(/^[A-Za-z0-9_]*$/, 'must be letters, digits or _ only (API keys are read as <prefix>-<secret>)')
        .nullable()
        .optional(),
    })
    .optional(),
  llmModels: z.array(z.looseObject({ ...named, maxContext: z.number(), maxResponse: z.number(), quoteMaxToken: z.number(), defaultConfig: extraBody })).optional(),
  vectorModels: z
    .array(z.looseObject({ ...named, defaultToken: z.number(), maxToken: z.number(), defaultConfig: extraBody, dbConfig: extraBody, queryConfig: extraBody }))
    .optional(),
  reRankModels: z.array(z.looseObject(named)).optional(),
  audioSpeechModels: z.array(z.looseObject(named)).optional(),
  whisperModel: z.looseObject(named).optional(),
});

export const LOCAL_LEXICAL_MODEL: VectorModel = {
  model: LOCAL_LEXICAL_VECTOR_MODEL,
  name: 'Local lexical (hashed n-grams)',
  provider: 'local-lexical',
  dimensions: 256,
  charsPointsPrice: 0,
  defaultToken: 512,
  maxToken: 3000,
  weight: 100,
};

/** The reference's built-in feConfigs (v4.8.9), plus the limit intervals from our PLAN_* variables. */
function defaultFeConfigs(config: Config): Record<string, unknown> {
  return {
    show_emptyChat: true,
    show_git: true,
    docUrl: 'https://doc.fastgpt.in',
    openAPIDocUrl: 'https://doc.fastgpt.in/docs/development/openapi',
    systemTitle: 'FastGPT',
    concatMd: '',
    limit: { exportDatasetLimitMinutes: config.PLAN_EXPORT_INTERVAL_MINUTES, websiteSyncLimitMinuted: config.PLAN_WEB_SYNC_INTERVAL_MINUTES },
    scripts: [],
    favicon: '/favicon.ico',
    uploadFileMaxSize: Math.floor(config.UPLOAD_LIMIT_BYTES / (1024 * 1024)),
  };
}

/** Built-in catalogue: the local vector model and one OpenAI-compatible chat model. */
export function defaultCatalog(config: Config): ModelCatalog {
  return {
    llmModels: [
      {
        model: 'gpt-4o-mini',
        name: 'gpt-4o-mini',
        maxContext: 125000,
        maxResponse: 16000,
        quoteMaxToken: 120000,
        maxTemperature: 1.2,
        charsPointsPrice: 0,
        vision: true,
        datasetProcess: true,
        usedInClassify: true,
        usedInExtractFields: true,
        usedInToolCall: true,
        usedInQueryExtension: true,
        toolChoice: true,
        functionCall: false,
        defaultConfig: {},
        requestUrl: config.OPENAI_BASE_URL,
        requestAuth: config.CHAT_API_KEY,
      },
    ],
    vectorModels: [LOCAL_LEXICAL_MODEL],
    reRankModels: [],
    audioSpeechModels: [],
    whisperModel: undefined,
    feConfigs: defaultFeConfigs(config),
    systemEnv: { openapiPrefix: 'fastgpt', vectorMaxProcess: 15, qaMaxProcess: 15 },
  };
}

/**
 * Reads MODEL_CONFIG_PATH (the reference's config.json shape). Lists in the file replace the
 * built-in ones; feConfigs and systemEnv are merged over the defaults (file wins). The local
 * vector model stays available so datasets created with it keep working.
 */
export async function loadModelCatalog(config: Config): Promise<ModelCatalog> {
  const catalog = defaultCatalog(config);
  if (!config.MODEL_CONFIG_PATH) return catalog;
  let raw: unknown;
  try {
    raw = JSON.parse(stripJsonComments(await readFile(config.MODEL_CONFIG_PATH, 'utf8')));
  } catch (error) {
    // V8 quotes the text around a JSON syntax error, which may be a key's value: never shown.
    const reason = error instanceof SyntaxError ? `not valid JSON (${error.message.split(', "')[0]})` : (error as Error).message;
    throw new ConfigError(`Invalid configuration:\n  MODEL_CONFIG_PATH ${config.MODEL_CONFIG_PATH}: ${reason}`);
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(`Invalid configuration:\n  MODEL_CONFIG_PATH ${config.MODEL_CONFIG_PATH}: ${issue?.path.join('.')}: ${issue?.message}`);
  }
  const file = parsed.data as Partial<ModelCatalog>;
  const vectorModels = file.vectorModels?.length ? [...file.vectorModels] : catalog.vectorModels;
  if (!vectorModels.some((model) => model.model === LOCAL_LEXICAL_VECTOR_MODEL)) vectorModels.push(LOCAL_LEXICAL_MODEL);
  return {
    llmModels: file.llmModels?.length ? file.llmModels : catalog.llmModels,
    vectorModels,
    reRankModels: file.reRankModels ?? catalog.reRankModels,
    audioSpeechModels: file.audioSpeechModels ?? catalog.audioSpeechModels,
    whisperModel: file.whisperModel ?? catalog.whisperModel,
    feConfigs: { ...catalog.feConfigs, ...(file.feConfigs ?? {}) },
    systemEnv: { ...catalog.systemEnv, ...(file.systemEnv ?? {}) },
  };
}
