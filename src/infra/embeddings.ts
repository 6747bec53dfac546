/**
 * Embedding providers for the vector models of the model configuration:
 * - 'local-lexical' (the built-in `local-lexical-v1`): hashed n-gram vectors computed in
 *   process, no network (see src/domain/lexical-embedding.ts);
 * - anything else: an OpenAI-compatible `POST …/embeddings` ({model, input} → {data, usage}),
 *   with the model's `defaultConfig` and, by purpose, its `dbConfig` (storing) or `queryConfig`
 *   (searching) merged into the body as the reference does (e.g. `input_type` for providers
 *   that embed queries and documents differently, `dimensions` for text-embedding-3).
 * Vectors come back L2-normalised; `tokens` is the provider's usage count when it reports one.
 */
import { DEFAULT_LEXICAL_DIMENSIONS, lexicalEmbed, normalizeVector } from '../domain/lexical-embedding.js';
import { countTokens, reportedTokens } from '../domain/token-count.js';
import type { VectorModel } from '../domain/models.js';
import { LOCAL_LEXICAL_VECTOR_MODEL } from '../domain/models.js';
import { endpointUrl, ProviderError, postProviderJson } from './provider-http.js';

/** What the vectors are for: stored with data (`db`) or compared with stored ones (`query`). */
export type EmbeddingPurpose = 'db' | 'query';

export interface EmbeddingProvider {
  readonly model: string;
  /** Vector length when known up front (always for the local model and configured dimensions). */
  readonly dimensions?: number;
  embed(texts: string[], purpose?: EmbeddingPurpose, signal?: AbortSignal): Promise<{ vectors: number[][]; tokens: number }>;
}

export interface ProviderDefaults {
  /** Used when the model has no requestUrl (OPENAI_BASE_URL). */
  baseUrl?: string;
  /** Used when the model has no requestAuth (CHAT_API_KEY). */
  apiKey?: string;
  timeoutMs: number;
}

/** Texts per request to a remote provider (OpenAI accepts up to 2048; smaller batches fail smaller). */
export const EMBEDDING_BATCH_SIZE = 64;

interface OpenAiEmbeddingResponse {
  data?: { embedding?: unknown; index?: unknown }[];
  usage?: { total_tokens?: unknown; prompt_tokens?: unknown };
}

export function isLocalLexicalModel(model: VectorModel): boolean {
  return model.provider === 'local-lexical' || (model.provider === undefined && model.model === LOCAL_LEXICAL_VECTOR_MODEL);
}

/**
 * Characters of text the local model embeds (and counts) between turns of the event loop, each
 * text counting LOCAL_TEXT_OVERHEAD besides its length: ~0.5 s per MB, so a slice is tens of ms.
 * A training batch of 8 items with 50 long indexes each held the loop 3.6 s in one go.
 */
export const LOCAL_EMBED_SLICE_CHARS = 100_000;
const LOCAL_TEXT_OVERHEAD = 400;

function createLocalProvider(model: VectorModel): EmbeddingProvider {
  const dimensions = model.dimensions ?? DEFAULT_LEXICAL_DIMENSIONS;
  return {
    model: model.model,
    dimensions,
    async embed(texts, _purpose, signal) {
      const vectors: number[][] = [];
      let tokens = 0;
      let slice = 0;
      for (const text of texts) {
        if (slice >= LOCAL_EMBED_SLICE_CHARS) {
          slice = 0;
          await new Promise<void>((resolve) => setImmediate(resolve));
          signal?.throwIfAborted();
        }
        vectors.push(lexicalEmbed(text, dimensions));
        tokens += countTokens(text);
        slice += LOCAL_TEXT_OVERHEAD + (text?.length ?? 0);
      }
      return { vectors, tokens };
    },
  };
}

/** Truncate or zero-pad to `dimensions`, then L2-normalise (a zero vector stays zero). */
function shapeVector(values: number[], dimensions: number | undefined): number[] {
  const vector = dimensions === undefined ? values.slice() : Array.from({ length: dimensions }, (_, i) => values[i] ?? 0);
  normalizeVector(vector);
  return vector;
}

function readVectors(body: OpenAiEmbeddingResponse, expected: number, label: string): number[][] {
  if (!Array.isArray(body.data)) throw new ProviderError(`The ${label} answer has no data list`, 'invalid_response');
  if (body.data.length !== expected) {
    throw new ProviderError(`The ${label} returned ${body.data.length} vectors for ${expected} texts`, 'invalid_response');
  }
  const vectors: (number[] | undefined)[] = new Array(expected);
  body.data.forEach((item, position) => {
    const index = typeof item.index === 'number' ? item.index : position;
    const embedding = item.embedding;
    if (!Array.isArray(embedding) || embedding.length === 0 || !embedding.every((x) => typeof x === 'number' && Number.isFinite(x))) {
      throw new ProviderError(`The ${label} returned an invalid embedding at index ${index}`, 'invalid_response');
    }
    if (!Number.isInteger(index) || index < 0 || index >= expected || vectors[index]) {
      throw new ProviderError(`The ${label} returned an unexpected index ${index}`, 'invalid_response');
    }
    vectors[index] = embedding as number[];
  });
  return vectors as number[][];
}

/** The configured extra body fields for a purpose; `model` and `input` are always ours. */
export function embeddingRequestExtras(model: VectorModel, purpose: EmbeddingPurpose | undefined): Record<string, unknown> {
  const byPurpose = purpose === 'db' ? model.dbConfig : purpose === 'query' ? model.queryConfig : undefined;
  return { ...(model.defaultConfig ?? {}), ...(byPurpose ?? {}) };
}

function createOpenAiProvider(model: VectorModel, defaults: ProviderDefaults): EmbeddingProvider {
  const base = model.requestUrl ?? defaults.baseUrl;
  const apiKey = model.requestAuth ?? defaults.apiKey;
  const label = `embedding model ${model.model}`;
  return {
    model: model.model,
    dimensions: model.dimensions,
    async embed(texts, purpose, signal) {
      if (texts.length === 0) return { vectors: [], tokens: 0 };
      if (!base) throw new ProviderError(`The ${label} has no request URL (set its requestUrl or OPENAI_BASE_URL)`, 'not_configured');
      const blank = texts.findIndex((text) => !text?.trim());
      if (blank >= 0) throw new ProviderError(`Text ${blank} to embed is empty`, 'invalid_input');
      const url = endpointUrl(base, '/embeddings');
      const extras = embeddingRequestExtras(model, purpose);
      const vectors: number[][] = [];
      let tokens = 0;
      for (let start = 0; start < texts.length; start += EMBEDDING_BATCH_SIZE) {
        const batch = texts.slice(start, start + EMBEDDING_BATCH_SIZE);
        const body = await postProviderJson<OpenAiEmbeddingResponse>({
          url,
          apiKey,
          timeoutMs: defaults.timeoutMs,
          label,
          body: { ...extras, model: model.model, input: batch },
          signal,
        });
        for (const vector of readVectors(body, batch.length, label)) vectors.push(shapeVector(vector, model.dimensions));
        const reported = reportedTokens(body.usage?.total_tokens) ?? reportedTokens(body.usage?.prompt_tokens);
        tokens += reported ?? batch.reduce((sum, text) => sum + countTokens(text), 0);
      }
      const length = vectors[0]!.length;
      if (vectors.some((vector) => vector.length !== length)) {
        throw new ProviderError(`The ${label} returned vectors of different lengths`, 'invalid_response');
      }
      return { vectors, tokens };
    },
  };
}

export function createEmbeddingProvider(model: VectorModel, defaults: ProviderDefaults): EmbeddingProvider {
  return isLocalLexicalModel(model) ? createLocalProvider(model) : createOpenAiProvider(model, defaults);
}
