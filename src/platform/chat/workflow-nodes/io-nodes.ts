/** The dataset search node runner (the HTTP and Laf nodes are in http-node.ts). */
import type { NodeRunner } from '../../../domain/workflow/types.js';
import type { NodeDeps } from './node-deps.js';

/** Search modes of older exports: the re-rank variants became a mode plus `usingReRank`. */
const LEGACY_SEARCH_MODES: Record<string, { searchMode: string; usingReRank: boolean }> = {
  embeddingReRank: { searchMode: 'embedding', usingReRank: true },
  embFullTextReRank: { searchMode: 'mixedRecall', usingReRank: true },
};

/** A switch stored as a boolean or as its text. */
const isOn = (value: unknown) => value === true || value === 'true';

export function createIoRunners(deps: NodeDeps): Record<string, NodeRunner> {
  const datasetSearchNode: NodeRunner = async ({ params }) => {
    const datasets = (Array.isArray(params.datasets) ? params.datasets : []) as { datasetId: string }[];
    if (datasets.length === 0) throw new Error('core.chat.error.Select dataset empty');
    const text = String(params.userChatInput ?? '');
    if (!text) throw new Error('core.chat.error.User input empty');
    if (!deps.searchDatasets) throw new Error('Dataset search is not available in this deployment');
    const limit = Number(params.limit ?? 1500) || 1500;
    const similarity = Number(params.similarity ?? 0.4);
    const stored = String(params.searchMode || 'embedding');
    const searchMode = LEGACY_SEARCH_MODES[stored]?.searchMode ?? stored;
    const usingReRank = LEGACY_SEARCH_MODES[stored]?.usingReRank ?? isOn(params.usingReRank);
    const result = await deps.searchDatasets({
      teamId: deps.teamId,
      datasetIds: datasets.map((d) => d.datasetId),
      text,
      limit,
      similarity,
      searchMode,
      usingReRank,
    });
    return {
      outputs: { quoteQA: result.list },
      responseData: { totalPoints: 0, query: text, model: result.model, tokens: result.tokens, similarity, limit, searchMode, searchUsingReRank: usingReRank, quoteList: result.list },
      usages: [{ moduleName: 'Dataset search', totalPoints: 0, model: result.model, tokens: result.tokens }],
      toolResponses: result.list.map((item) => ({ id: item.id, text: `${item.q}\n${item.a}`.trim() })),
    };
  };

  return { datasetSearchNode };
}
