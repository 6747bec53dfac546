/** The dataset search node runner (the HTTP and Laf nodes are in http-node.ts). */
import { selectHistories } from '../../../domain/workflow/chat-values.js';
import { WorkflowError } from '../../../domain/workflow/dispatch.js';
import type { NodeRunner, NodeUsage } from '../../../domain/workflow/types.js';
import { presetQueries } from '../../../domain/workflow/prompts.js';
import { CallCut, CUT_MESSAGE, untilCut } from './call-cut.js';
import { extendQuery } from './llm-nodes.js';
import { modelUsage, type NodeDeps, nodeLlm } from './node-deps.js';

/** Search modes of older exports: the re-rank variants became a mode plus `usingReRank`. */
const LEGACY_SEARCH_MODES: Record<string, { searchMode: string; usingReRank: boolean }> = {
  embeddingReRank: { searchMode: 'embedding', usingReRank: true },
  embFullTextReRank: { searchMode: 'mixedRecall', usingReRank: true },
};

/** A switch stored as a boolean or as its text. */
const isOn = (value: unknown) => value === true || value === 'true';

export function createIoRunners(deps: NodeDeps): Record<string, NodeRunner> {
  const datasetSearchNode: NodeRunner = async ({ params, histories, node }) => {
    const datasets = (Array.isArray(params.datasets) ? params.datasets : []) as { datasetId: string }[];
    if (datasets.length === 0) throw new WorkflowError('core.chat.error.Select dataset empty');
    const text = String(params.userChatInput ?? '');
    if (!text) throw new WorkflowError('core.chat.error.User input empty');
    const search = deps.searchDatasets;
    if (!search) throw new WorkflowError('Dataset search is not available in this deployment');
    const limit = Number(params.limit ?? 1500) || 1500;
    const similarity = Number(params.similarity ?? 0.4);
    const stored = String(params.searchMode || 'embedding');
    const searchMode = LEGACY_SEARCH_MODES[stored]?.searchMode ?? stored;
    const usingReRank = LEGACY_SEARCH_MODES[stored]?.usingReRank ?? isOn(params.usingReRank);
    // The question is rewritten into extra queries first when the node asks for it (empty model = the default one).
    const usages: NodeUsage[] = [];
    // A question given as a JSON array is the query list itself; no model is asked then.
    const preset = presetQueries(text);
    let queries = preset ?? [text];
    let extension: Record<string, unknown> = {};
    if (!preset && isOn(params.datasetSearchUsingExtensionQuery)) {
      const llm = nodeLlm(deps, params.datasetSearchExtensionModel || undefined);
      const extended = await extendQuery(deps, llm, { question: text, background: String(params.datasetSearchExtensionBg ?? ''), histories: selectHistories(6, histories) });
      usages.push(modelUsage('Query extension', llm, extended.totalPoints, extended));
      // A cut extension rewrote nothing: no extensionResult (the search below is not run).
      if (!extended.cut) queries = extended.queries;
      extension = { extensionModel: llm.model.name, ...(extended.cut ? {} : { extensionResult: queries.slice(1).join('\n') }), extensionTokens: extended.tokens };
    }
    // Cut by the turn's hang-up (the extension's model call, or the search itself: call-cut.ts),
    // the node records what ran and that it was cut, finds nothing, and the turn ends.
    const cut = () => ({ responseData: { totalPoints: usages.reduce((sum, u) => sum + u.totalPoints, 0), query: queries.join('\n'), similarity, limit, searchMode, searchUsingReRank: usingReRank, ...extension, error: CUT_MESSAGE }, usages });
    let found: Awaited<ReturnType<typeof search>>;
    try {
      found = await untilCut(deps.signal, (signal) => search({ teamId: deps.teamId, datasetIds: datasets.map((d) => d.datasetId), queries, limit, similarity, searchMode, usingReRank, signal }));
    } catch (error) {
      if (error instanceof CallCut) return cut();
      throw error;
    }
    const { list, usage } = found;
    const { model, tokens } = usage;
    // Billed under the node's name, as the reference lists a run's usage.
    usages.unshift(Object.assign({}, usage, { moduleName: node.name ?? usage.moduleName }));
    return {
      outputs: { quoteQA: list },
      responseData: {
        totalPoints: usages.reduce((sum, u) => sum + u.totalPoints, 0),
        query: queries.join('\n'),
        model,
        tokens,
        similarity,
        limit,
        searchMode,
        searchUsingReRank: usingReRank,
        quoteList: list,
        ...extension,
      },
      usages,
      toolResponses: list.map((item) => ({ id: item.id, text: `${item.q}\n${item.a}`.trim() })),
    };
  };

  return { datasetSearchNode };
}
