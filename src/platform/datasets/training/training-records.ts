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
export type NewTraining = Omit<TrainingRecord, '_id' | 'expireAt' | 'lockTime' | 'retryCount' | 'errorMsg' | 'failed' | 'stopped'>;
/** What becomes of a failed item: retried after its backoff, or given up. */
export type FailureOutcome = { givingUp: true } | { givingUp: false; lockTime: Date };
/** What a queue item's removal needs to know of it. */
export type QueuedItem = Pick<TrainingRecord, '_id' | 'teamId' | 'datasetId' | 'collectionId' | 'model'>;

