/** The stored shape of a training queue item and the records training.repo.ts answers with. */
import type { ObjectId } from 'mongodb';
import type { Plain } from '../../../infra/plain-record.js';
import type { TrainingMode } from '../collections/collection.repo.js';

export interface TrainingDoc {
  _id: ObjectId;
  teamId: ObjectId;
  tmbId: ObjectId;
  datasetId: ObjectId;
  collectionId: ObjectId;
  billId: string;
  mode: TrainingMode;
  expireAt: Date;
  /**
   * Not before lockTime + lock window: 2000-01-01 when queued, pushed forward by a failure's
   * backoff, far future when the item failed too often. Claims themselves live in
   * `dataset_training_claims` (one insert per batch instead of per-item updates).
   */
  lockTime: Date;
  model: string;
  prompt: string;
  q: string;
  a: string;
  chunkIndex: number;
  weight: number;
  /** Set on rebuild items: the data item to re-embed. */
  dataId?: ObjectId;
  indexes: { text: string }[];
  /**
   * Set on rebuild items: the characters of the data item's indexes, which the worker embeds
   * (their q and indexes here are placeholders), so that a claim counts them as it counts others'.
   */
  textChars?: number;
  /**
   * Set on items a QA item produced: its id. They are not claimed while it is still queued, so
   * a QA item that is retried after a crash cannot have had any of them trained already.
   */
  sourceId?: ObjectId;
  /** Set on QA items once the LLM answered: the pairs to queue (a retry reuses them). */
  qaPairs?: { q: string; a: string }[];
  /** Failed attempts so far. */
  retryCount: number;
  errorMsg?: string;
  /**
   * Set with errorMsg, and whether the item gave up (PERMANENT_LOCK): equalities FerretDB filters
   * on in PostgreSQL, where it passes neither `$exists` nor ranges of lockTime down.
   */
  failed?: true;
  stopped?: boolean;
}

export type TrainingRecord = Plain<TrainingDoc>;

/**
 * Characters of text one claimed batch may hold (the first item always, so no item is queued
 * with more, enqueue.ts): about half a second of the local model's work, done in slices.
 */
export const TRAINING_BATCH_CHARS = 1_000_000;

/** Characters a queue item gives its worker to embed: q, a and its custom indexes, or a rebuilt item's indexes. */
export const trainingChars = (doc: Pick<TrainingDoc, 'q' | 'a' | 'indexes' | 'textChars'>): number =>
  doc.textChars ?? doc.q.length + (doc.a?.length ?? 0) + (doc.indexes ?? []).reduce((sum, index) => sum + index.text.length, 0);
export type NewTraining = Omit<TrainingRecord, '_id' | 'expireAt' | 'lockTime' | 'retryCount' | 'errorMsg' | 'failed' | 'stopped'>;
/** What becomes of a failed item: retried after its backoff, or given up. */
export type FailureOutcome = { givingUp: true } | { givingUp: false; lockTime: Date };
/** What a queue item's removal needs to know of it. */
export type QueuedItem = Pick<TrainingRecord, '_id' | 'teamId' | 'datasetId' | 'collectionId' | 'model'>;

