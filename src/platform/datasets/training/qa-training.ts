import { buildQaPrompt, parseQaPairs } from '../../../domain/qa-extract.js';
import { splitText } from '../../../domain/text-splitter.js';
import { chatCompletion } from '../../../infra/llm-chat.js';
import type { DatasetsContext } from '../context.js';
import { pushToTrainingQueue } from './enqueue.js';
import type { TrainingRecord } from './training.repo.js';

/**
 * QA mode: the dataset's LLM turns the chunk into Q/A pairs, which are queued as chunk items;
 * the QA item is deleted after they are queued. No pair found: the chunk is split instead.
 */
export async function processQaItem(ctx: DatasetsContext, item: TrainingRecord): Promise<void> {
  const dataset = await ctx.repos.datasets.findById(item.teamId, item.datasetId);
  if (!dataset || !(await ctx.repos.collections.exists(item.teamId, item.collectionId))) {
    await ctx.repos.trainings.deleteById(item._id);
    return;
  }
  const llm = ctx.models.getLLMModel(item.model) ?? ctx.models.defaultLLMModel();
  if (!llm) throw new Error(`LLM '${item.model}' is not configured`);
  const answer = await chatCompletion(
    llm,
    buildQaPrompt(item.q, item.prompt || undefined),
    { baseUrl: ctx.config.OPENAI_BASE_URL, apiKey: ctx.config.CHAT_API_KEY, timeoutMs: 10 * 60_000 },
    { temperature: 0.3 },
  );
  let pairs = parseQaPairs(answer.content);
  if (pairs.length === 0) pairs = splitText({ text: item.q, chunkLen: 512, overlapRatio: 0.2 }).chunks.map((q) => ({ q, a: '' }));
  await pushToTrainingQueue(ctx, {
    teamId: item.teamId,
    tmbId: item.tmbId,
    dataset,
    collectionId: item.collectionId,
    mode: 'chunk',
    billId: item.billId,
    items: pairs.map((pair) => ({ q: pair.q, a: pair.a, chunkIndex: item.chunkIndex })),
  });
  await ctx.repos.trainings.deleteById(item._id);
}
