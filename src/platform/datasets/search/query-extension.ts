import { extendedQueries, queryExtensionRequest } from '../../../domain/workflow/prompts.js';
import { chatCompletion } from '../../../infra/llm-chat.js';
import { Errors } from '../../../infra/errors.js';
import type { UsageLine } from '../../identity/usage.repo.js';
import type { DatasetsContext } from '../context.js';
import { usagePoints } from '../../../domain/usage-points.js';

export interface ExtendedQuestion {
  /** The question first, then the model's rewrites. */
  queries: string[];
  /** The model asked, as searchTest names it (`queryExtensionModel`). */
  model: string;
  /** What the call used, as a usage line (no tokens and no points when it failed). */
  usage: UsageLine;
}

/**
 * searchTest's query extension (the reference's): the chosen language model (an unknown id
 * falls back to the default one, as the reference's lookup does) rewrites the question into up
 * to 3 more search queries. A failed call is logged and the question is searched alone, as a
 * failed rerank keeps the results without it.
 */
export async function extendQuestion(ctx: DatasetsContext, input: { model: string; question: string; background: string }): Promise<ExtendedQuestion> {
  const llm = ctx.models.llmModelOrDefault(input.model);
  if (!llm) throw Errors.missingParams('No LLM model is configured for the query extension (datasetSearchExtensionModel)');
  try {
    const answer = await chatCompletion(
      llm,
      [{ role: 'user', content: queryExtensionRequest(input.question, input.background) }],
      { baseUrl: ctx.config.OPENAI_BASE_URL, apiKey: ctx.config.CHAT_API_KEY, timeoutMs: 60_000 },
      { temperature: 0.1, maxTokens: 300 },
    );
    const tokens = answer.inputTokens + answer.outputTokens;
    const usage = { moduleName: 'Query extension', totalPoints: usagePoints(llm, tokens), model: llm.name, tokens, inputTokens: answer.inputTokens, outputTokens: answer.outputTokens };
    return { queries: extendedQueries(input.question, answer.content), model: llm.model, usage };
  } catch (error) {
    ctx.log.warn({ error: (error as Error).message }, 'query extension failed; searching the question alone');
    return { queries: [input.question], model: llm.model, usage: { moduleName: 'Query extension', totalPoints: 0, model: llm.name, tokens: 0 } };
  }
}
