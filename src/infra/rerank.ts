/**
 * Rerank through the common OpenAI-compatible / Jina / Cohere `/rerank` protocol
 * (the reference's rerank call, last step of a search; docs/datasets.md): `{model, query, documents: string[]}` → `{results: [{index,
 * relevance_score}]}`. The model's `requestUrl` is the full endpoint (as in the reference);
 * without one, `{baseUrl}/rerank` is used.
 */
import type { ReRankModel } from '../domain/models.js';
import { endpointUrl, ProviderError, postProviderJson } from './provider-http.js';
import type { ProviderDefaults } from './embeddings.js';

export interface RerankHit {
  id: string;
  /** The provider's relevance score. */
  score: number;
  /** Position of the document in the input list. */
  index: number;
}

interface RerankResponse {
  results?: { index?: unknown; relevance_score?: unknown; score?: unknown }[];
}

/** Documents ordered by the provider's relevance, best first (documents it left out are omitted). */
export async function rerank(
  model: ReRankModel,
  query: string,
  documents: { id: string; text: string }[],
  defaults: ProviderDefaults,
): Promise<RerankHit[]> {
  if (documents.length === 0) return [];
  const label = `rerank model ${model.model}`;
  const url = model.requestUrl ?? (defaults.baseUrl ? endpointUrl(defaults.baseUrl, '/rerank') : undefined);
  if (!url) throw new ProviderError(`The ${label} has no request URL (set its requestUrl or OPENAI_BASE_URL)`, 'not_configured');
  const body = await postProviderJson<RerankResponse>({
    url,
    apiKey: model.requestAuth ?? defaults.apiKey,
    timeoutMs: defaults.timeoutMs,
    label,
    body: { model: model.model, query, documents: documents.map((document) => document.text) },
  });
  if (!Array.isArray(body.results)) throw new ProviderError(`The ${label} answer has no results list`, 'invalid_response');

  const seen = new Set<number>();
  const hits: RerankHit[] = [];
  for (const result of body.results) {
    const index = result.index;
    const score = typeof result.relevance_score === 'number' ? result.relevance_score : result.score;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= documents.length || seen.has(index)) {
      throw new ProviderError(`The ${label} returned an unexpected index ${String(index)}`, 'invalid_response');
    }
    if (typeof score !== 'number' || !Number.isFinite(score)) {
      throw new ProviderError(`The ${label} returned no relevance score for index ${index}`, 'invalid_response');
    }
    seen.add(index);
    hits.push({ id: documents[index]!.id, score, index });
  }
  return hits.sort((a, b) => b.score - a.score || a.index - b.index);
}
