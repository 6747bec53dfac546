import { countTokens } from '../../../domain/token-count.js';
import { describeError } from '../../../infra/database-errors.js';
import { Errors } from '../../../infra/errors.js';
import { newId } from '../../../infra/plain-record.js';
import type { TrainingMode } from '../collections/collection.repo.js';
import type { DatasetsContext } from '../context.js';
import { buildIndexes, MAX_CUSTOM_INDEXES, simpleText } from '../data/data-indexes.js';
import type { DatasetRecord } from '../datasets/dataset.repo.js';
import { removeWritesOfDeletedDatasets } from './deleted-datasets.js';
import type { NewTraining } from './training.repo.js';
import { TRAINING_BATCH_CHARS, trainingChars } from './training-records.js';
import { setImmediate as nextTurn } from 'node:timers/promises';

export interface PushItem {
  q: string;
  a?: string;
  chunkIndex?: number;
  indexes?: { text: string }[];
}

export interface PushResult {
  insertLen: number;
  overToken: PushItem[];
  repeat: PushItem[];
  error: PushItem[];
}

/**
 * Vectors predicted per QA item (the reference's predictDataLimitLength): the LLM turns a chunk
 * into pairs not known until it answers, each storing two vectors (q+a and q alone).
 */
export const QA_VECTORS_PER_ITEM = 20;

/**
 * Characters of items normalised between turns of the event loop (a few ms of work), each item
 * counting ITEM_CHARS besides its text: a 100 MB text file imports ~200,000 chunks, whose sizing
 * and normalising held the loop ~0.7 s when done at once.
 */
const CHARS_PER_TURN = 1_000_000;
const ITEM_CHARS = 100;

/** Counts the items walked; true when a turn of the event loop is due. */
function turnCounter(): (item: PushItem) => boolean {
  let chars = 0;
  return (item) => {
    chars += ITEM_CHARS + item.q.length + (item.a?.length ?? 0);
    for (const index of item.indexes ?? []) chars += index.text.length;
    if (chars < CHARS_PER_TURN) return false;
    chars = 0;
    return true;
  };
}

/**
 * How many vectors a push may add, for the dataset-size limit (counted in vectors): a chunk (or
 * auto, trained as chunk) item stores one per index the worker builds for it, custom ones included;
 * an item the queue refuses (empty q, too many indexes) stores none.
 */
export async function predictVectors(items: PushItem[], mode: TrainingMode): Promise<number> {
  if (mode === 'qa') return items.length * QA_VECTORS_PER_ITEM;
  const turnDue = turnCounter();
  let vectors = 0;
  for (const item of items) {
    const q = simpleText(item.q);
    if (q && (item.indexes?.length ?? 0) <= MAX_CUSTOM_INDEXES) vectors += buildIndexes(q, simpleText(item.a ?? ''), item.indexes).length;
    if (turnDue(item)) await nextTurn();
  }
  return vectors;
}

type QueueInput = {
  teamId: string;
  tmbId: string;
  dataset: DatasetRecord;
  collectionId: string;
  mode: TrainingMode;
  prompt?: string;
  billId?: string;
  items: PushItem[];
  /** Runs before each batch; throws to stop (an import whose lease lapsed: the sweep is taking it back). */
  beforeBatch?: () => void;
};

/**
 * Whether a text is longer than `maxToken` tokens, the one token-limit check of what is embedded
 * (insertData, updates and the queue's custom indexes). A text has at most as many tokens as
 * UTF-16 units, so short ones are not counted.
 */
export function overTokenLimit(text: string, maxToken: number): boolean {
  return text.length > maxToken && countTokens(text) > maxToken;
}

/**
 * Whether a custom index is longer than the vector model takes (insertData's check): the worker
 * embeds each whole, and 50 indexes of 19 KB per item held its event loop seconds per batch.
 */
function hasOverLongIndex(indexes: { text: string }[], maxToken: number): boolean {
  return indexes.some((index) => overTokenLimit(index.text, maxToken));
}

/**
 * Queues items for training (pushDataListToTrainingQueue): normalises them, sorts out empty
 * ones and ones with more than MAX_CUSTOM_INDEXES indexes (`error`), over-long and repeated
 * ones (`overToken`: q and a together over the limit, as the reference counts them; trained as
 * chunks, a custom index over the vector model's maxToken; or more text than one training batch
 * holds, TRAINING_BATCH_CHARS, since a batch's first item is claimed whatever its size), and
 * inserts the rest. `auto` is trained like `chunk` (the reference's open-source
 * workers never consume it).
 */
export async function pushToTrainingQueue(ctx: DatasetsContext, input: QueueInput): Promise<PushResult> {
  const { result, docs } = await prepareTrainingItems(ctx, input);
  const queued = docs.map((doc) => ({ ...doc, _id: newId() }));
  try {
    // Batches keep each insert bounded.
    for (let start = 0; start < queued.length; start += 500) {
      input.beforeBatch?.();
      result.insertLen += await ctx.repos.trainings.insertMany(queued.slice(start, start + 500));
    }
    if (result.insertLen > 0) await removeWritesOfDeletedDatasets(ctx, [{ teamId: input.teamId, datasetId: input.dataset._id }]);
  } catch (error) {
    // The push answers an error, so none of it stays queued (as the reference's transaction): a
    // client sending it again would otherwise queue, train and bill its items twice.
    await ctx.repos.trainings.deleteItems(queued).catch((undo: unknown) => ctx.log.warn(`training push failed; removing its ${queued.length} queued items failed: ${describeError(undo)}`));
    throw error;
  }
  if (result.insertLen > 0) ctx.wakeWorker();
  return result;
}

/** The queue items of a push, and what was refused (insertLen is left at 0). */
export async function prepareTrainingItems(ctx: DatasetsContext, input: QueueInput): Promise<{ result: PushResult; docs: NewTraining[] }> {
  const qa = input.mode === 'qa';
  let model: string;
  let limit: number;
  /** Tokens one custom index may have (chunk training embeds each); QA training does not embed them. */
  let indexLimit = Number.POSITIVE_INFINITY;
  let weight = 0;
  if (qa) {
    const llm = ctx.models.llmModelOrDefault(input.dataset.agentModel);
    if (!llm) throw Errors.invalidVectorModelOrQAModel('No LLM is configured for QA training');
    model = llm.model;
    limit = llm.maxContext * 0.8;
  } else {
    const vector = ctx.embedders().vectorModel(input.dataset.vectorModel);
    model = vector.model;
    limit = vector.maxToken * 1.3;
    indexLimit = vector.maxToken;
    weight = vector.weight ?? 0;
  }
  const result: PushResult = { insertLen: 0, overToken: [], repeat: [], error: [] };
  const seen = new Set<string>();
  const docs: NewTraining[] = [];
  const turnDue = turnCounter();
  for (const raw of input.items) {
    const item = { ...raw, q: simpleText(raw.q), a: simpleText(raw.a ?? '') };
    const key = `${item.q}\u0000${item.a}`;
    const tooMany = (raw.indexes?.length ?? 0) > MAX_CUSTOM_INDEXES;
    const indexes = tooMany ? [] : (raw.indexes ?? []).map((index) => ({ text: simpleText(index.text) })).filter((index) => index.text);
    if (!item.q) result.error.push(raw);
    else if (tooMany) result.error.push(raw);
    else if (item.q.length + item.a.length > limit || hasOverLongIndex(indexes, indexLimit) || trainingChars({ ...item, indexes }) > TRAINING_BATCH_CHARS) {
      result.overToken.push(raw);
    }
    else if (seen.has(key)) result.repeat.push(raw);
    else {
      seen.add(key);
      docs.push({
        teamId: input.teamId,
        tmbId: input.tmbId,
        datasetId: input.dataset._id,
        collectionId: input.collectionId,
        billId: input.billId ?? '',
        mode: qa ? 'qa' : 'chunk',
        model,
        prompt: qa ? (input.prompt ?? '') : '',
        q: item.q,
        a: item.a,
        chunkIndex: item.chunkIndex ?? 0,
        weight,
        indexes,
      });
    }
    if (turnDue(raw)) await nextTurn();
  }
  return { result, docs };
}
