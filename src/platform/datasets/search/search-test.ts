import { presetQueries } from '../../../domain/workflow/prompts.js';
import type { AuthContext } from '../../auth/types.js';
import type { DatasetsContext } from '../context.js';
import { extendQuestion } from './query-extension.js';
import type { SearchMode, SearchService } from './search.service.js';

export interface SearchTestInput {
  datasetId: string;
  text: string;
  limit: number;
  similarity: number;
  searchMode: SearchMode;
  usingReRank: boolean;
  datasetSearchUsingExtensionQuery: boolean;
  datasetSearchExtensionModel?: string;
  datasetSearchExtensionBg: string;
}

/**
 * searchTest as the reference runs it: read permission on the dataset, the question extended by
 * the named model (when one is named), every query searched and merged, and the usage billed to
 * the caller (the query embeddings at the vector model's price, plus the extension call).
 */
export function createSearchTest(ctx: DatasetsContext, service: SearchService) {
  return async function searchTest(auth: AuthContext, input: SearchTestInput) {
    const { dataset } = await ctx.auth.authDataset(auth, input.datasetId, 'read');
    // A question given as a JSON array is the query list itself; no model is asked then.
    const preset = presetQueries(input.text);
    const extension =
      !preset && input.datasetSearchUsingExtensionQuery && input.datasetSearchExtensionModel
        ? await extendQuestion(ctx, { model: input.datasetSearchExtensionModel, question: input.text, background: input.datasetSearchExtensionBg })
        : undefined;
    const searched = service.searchPriced({
      queries: preset ?? extension?.queries ?? [input.text],
      teamId: auth.teamId,
      datasetIds: [dataset._id],
      vectorModel: dataset.vectorModel,
      limit: input.limit,
      similarity: input.similarity,
      searchMode: input.searchMode,
      usingReRank: input.usingReRank,
    });
    const { tokens: _queryTokens, usage, ...result } = await searched.catch(async (error: unknown) => {
      // The extension's model answered: it is billed when the search after it fails.
      if (extension) await ctx.chargeUsage(auth, { appName: 'Search test', list: [extension.usage] });
      throw error;
    });
    await ctx.chargeUsage(auth, { appName: 'Search test', list: extension ? [usage, extension.usage] : [usage] });
    return { ...result, ...(extension ? { queryExtensionModel: extension.model } : {}) };
  };
}
