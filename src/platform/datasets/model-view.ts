import type { LLMModel, VectorModel } from '../../domain/models.js';

/**
 * A dataset's model as clients see it: never the provider URL or key. A model the configuration
 * no longer has shows as the first configured one (as the reference's look-up answers, so the web
 * client always finds maxToken and the other fields); with none configured, just its name.
 */
export function modelView<M extends VectorModel | LLMModel>(
  model: M | undefined,
  fallback: M | undefined,
  name: string,
): Omit<M, 'requestUrl' | 'requestAuth'> | { model: string; name: string } {
  const shown = model ?? fallback;
  if (!shown) return { model: name, name };
  const { requestUrl: _url, requestAuth: _auth, ...rest } = shown;
  return rest;
}
