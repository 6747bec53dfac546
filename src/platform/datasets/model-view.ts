import type { LLMModel, VectorModel } from '../system/model-types.js';

/** A model as clients see it: never the provider URL or key. */
export function modelView<M extends VectorModel | LLMModel>(model: M | undefined, fallbackName: string): Omit<M, 'requestUrl' | 'requestAuth'> | { model: string; name: string } {
  if (!model) return { model: fallbackName, name: fallbackName };
  const { requestUrl: _url, requestAuth: _auth, ...rest } = model;
  return rest;
}
