import { buildQaPrompt, parseQaPairs } from '../../../domain/qa-extract.js';
import { splitText } from '../../../domain/text-splitter.js';
import { chatCompletion } from '../../../infra/llm-chat.js';
import type { DatasetsContext } from '../context.js';
import { removeWritesOfDeletedDatasets } from './deleted-datasets.js';
import { predictVectors, prepareTrainingItems } from './enqueue.js';
import type { TrainingRecord } from './training.repo.js';

/**
 * QA mode: the dataset's LLM turns the chunk into Q/A pairs, which are queued as chunk items;
 * no pair found: the chunk is split instead. Idempotent, so a crash at any step only means the
 * item is processed again: the pairs are kept on the QA item before anything is queued (a retry
 * reuses them rather than asking the LLM for different ones), they are queued under ids derived
 * from the QA item and their text (queueing again adds nothing), and they wait while the QA item
 * exists (none is trained before the QA item is deleted, its last step).
 */
export async function processQaItem(ctx: DatasetsContext, item: TrainingRecord, signal?: AbortSignal): Promise<void> {
  const { trainings, datasets, collections } = ctx.repos;
  const dataset = await datasets.findById(item.teamId, item.datasetId);
  if (!dataset || !(await collections.exists(item.teamId, item.collectionId))) {
    await trainings.deleteItems([item]);
    return;
  }
  const pairs = item.qaPairs ?? (await trainings.storeQaPairs(item._id, await askForPairs(ctx, item, signal)));
  if (!pairs) return; // deleted meanwhile (its collection went)
  const items = pairs.map((pair) => ({ q: pair.q, a: pair.a, chunkIndex: item.chunkIndex }));
  // The push was sized by a guess (QA_VECTORS_PER_ITEM); the pairs are what will be stored. Over
  // the plan, the item fails with the size error (kept pairs: a retry asks the LLM nothing).
  await ctx.teamLimits.assertDatasetSize(item.teamId, await predictVectors(items, 'chunk'));
  const { docs } = await prepareTrainingItems(ctx, { teamId: item.teamId, tmbId: item.tmbId, dataset, collectionId: item.collectionId, mode: 'chunk', billId: item.billId, items });
  await trainings.insertDerived(item, docs);
  await trainings.deleteItems([item]);
  await removeWritesOfDeletedDatasets(ctx, [item]);
  ctx.wakeWorker();
}

async function askForPairs(ctx: DatasetsContext, item: TrainingRecord, signal?: AbortSignal): Promise<{ q: string; a: string }[]> {
  const llm = ctx.models.llmModelOrDefault(item.model);
  if (!llm) throw new Error(`LLM '${item.model}' is not configured`);
  const answer = await chatCompletion(
    llm,
    buildQaPrompt(item.q, item.prompt || undefined),
    { baseUrl: ctx.config.OPENAI_BASE_URL, apiKey: ctx.config.CHAT_API_KEY, timeoutMs: 10 * 60_000 },
    { temperature: 0.3, signal },
  );
  const pairs = parseQaPairs(answer.content);
  if (pairs.length > 0) return pairs.map((pair) => ({ q: pair.q, a: pair.a }));
  return splitText({ text: item.q, chunkLen: 512, overlapRatio: 0.2 }).chunks.map((q) => ({ q, a: '' }));
}
