import type { Config } from '../../../config.js';
import { createEmbeddingProvider, type EmbeddingPurpose } from '../../../infra/embeddings.js';
import { Errors } from '../../../infra/errors.js';
import type { ModelRegistry, VectorModel } from '../../../domain/models.js';

export interface Embedder {
  model: VectorModel;
  embed(texts: string[], purpose?: EmbeddingPurpose, signal?: AbortSignal): Promise<{ vectors: number[][]; tokens: number }>;
}

/** Resolves vector model names to embedding providers (one per model, reused). */
export function createEmbedderRegistry(models: ModelRegistry, config: Config) {
  const cache = new Map<string, Embedder>();
  return {
    /** The configured vector model, or a 400 naming the unknown one. */
    vectorModel(name: string): VectorModel {
      const model = models.getVectorModel(name);
      if (!model) throw Errors.invalidVectorModelOrQAModel(`Unknown vector model '${name}'`);
      return model;
    },
    forModel(name: string): Embedder {
      const existing = cache.get(name);
      if (existing) return existing;
      const model = this.vectorModel(name);
      const provider = createEmbeddingProvider(model, {
        baseUrl: config.OPENAI_BASE_URL,
        apiKey: config.CHAT_API_KEY,
        timeoutMs: config.OUTBOUND_TIMEOUT_MS,
      });
      const embedder: Embedder = { model, embed: (texts, purpose, signal) => provider.embed(texts, purpose, signal) };
      cache.set(name, embedder);
      return embedder;
    },
  };
}

export type EmbedderRegistry = ReturnType<typeof createEmbedderRegistry>;
