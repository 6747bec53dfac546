/**
 * Model and dataset-search look-ups for the chat area: which LLM a node uses and where its
 * OpenAI-compatible endpoint is (the model's requestUrl/requestAuth, else OPENAI_BASE_URL /
 * CHAT_API_KEY) and the datasets module's search.
 */
import type { FastifyInstance } from 'fastify';
import { WorkflowError } from '../../domain/workflow/dispatch.js';
import { Errors } from '../../infra/errors.js';
import type { LlmEndpoint } from '../../infra/llm-stream.js';
import type { LLMModel } from '../../domain/models.js';
import type { DatasetSearcher, ResolvedLlm } from './workflow-nodes/node-deps.js';

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

export function createModelAccess(app: FastifyInstance) {
  const endpointFor = (model: { requestUrl?: string; requestAuth?: string }): LlmEndpoint => ({
    // The reference's requestUrl is the full endpoint URL; a base URL is accepted too.
    baseUrl: (model.requestUrl || app.config.OPENAI_BASE_URL || DEFAULT_BASE_URL).replace(/\/(chat\/completions|embeddings|audio\/transcriptions|audio\/speech)\/?$/, ''),
    apiKey: model.requestAuth || app.config.CHAT_API_KEY || undefined,
  });

  function resolveLlm(model: unknown): ResolvedLlm {
    const name = typeof model === 'string' && model ? model : undefined;
    const found: LLMModel | undefined = (name ? app.models.getLLMModel(name) : undefined) ?? (name ? undefined : app.models.defaultLLMModel());
    if (!found) throw new WorkflowError(`The chat model is undefined: '${name ?? ''}' is not a configured LLM model`);
    return { model: found, endpoint: endpointFor(found) };
  }

  function firstLlm(): ResolvedLlm {
    const found = app.models.defaultLLMModel();
    if (!found) throw Errors.missingParams('No LLM model is configured');
    return { model: found, endpoint: endpointFor(found) };
  }

  function searchDatasets(): DatasetSearcher {
    return async (request) => {
      // The team's datasets as the datasets module keeps them (whole documents under the team's
      // stamp, which every dataset write bumps): a knowledge-base turn reads no dataset document.
      const found = await app.datasets.findInTeam(request.teamId, request.datasetIds);
      // Deleted datasets yield no quotes, as the reference: the workflow goes on without them.
      if (found.length === 0) return { list: [], usage: { moduleName: 'Dataset search', totalPoints: 0, model: '', tokens: 0 } };
      const vectorModel = found[0]!.vectorModel;
      const { list, usage } = await app.datasets.search.searchPriced({
        queries: request.queries,
        teamId: request.teamId,
        datasetIds: found.filter((doc) => doc.vectorModel === vectorModel).map((doc) => doc._id),
        vectorModel,
        limit: request.limit,
        similarity: request.similarity,
        searchMode: (['embedding', 'fullTextRecall', 'mixedRecall'].includes(request.searchMode) ? request.searchMode : 'embedding') as 'embedding',
        usingReRank: request.usingReRank,
        // The turn's: the query embedding is cut once its client hung up.
        signal: request.signal,
      });
      return { list, usage };
    };
  }

  /** A configured language model's name; undefined for a model the configuration does not have. */
  const llmNameOf = (model: string) => app.models.getLLMModel(model)?.name;

  return { resolveLlm, llmNameOf, firstLlm, endpointFor, searchDatasets };
}

export type ModelAccess = ReturnType<typeof createModelAccess>;
