import { BSON, type Collection, type Document, MongoInvalidArgumentError, type OptionalUnlessRequiredId } from 'mongodb';
import { refusedDocuments } from './database-errors.js';

/** About the most documents one command carries; a longer queue is written in several. */
const MAX_BATCH = 500;

/** One caller's documents, written together with other callers'. */
interface Pending<T> {
  docs: OptionalUnlessRequiredId<T>[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** Positions in the batch that were not written: all of them unless the driver names them. */
function failedPositions(error: unknown, size: number): Set<number> {
  const refused = refusedDocuments(error);
  return new Set(refused ? refused.map((entry) => entry.index) : Array.from({ length: size }, (_, index) => index));
}

/** Takes whole callers off the front of the queue, up to about MAX_BATCH documents (at least one caller). */
function takeBatch<T>(queue: Pending<T>[]): Pending<T>[] {
  let count = 0;
  let taken = 0;
  while (taken < queue.length && (taken === 0 || count + (queue[taken] as Pending<T>).docs.length <= MAX_BATCH)) {
    count += (queue[taken] as Pending<T>).docs.length;
    taken += 1;
  }
  return queue.splice(0, taken);
}

/**
 * Group commit for append-only records a request waits for (chat items; records it need not wait
 * for go through write-behind.ts): while one insert is in flight, the documents other requests
 * add wait and go together in the next `insertMany`. Each caller's
 * promise settles when all of its own documents are written, or rejects when one of them was not,
 * so an answer still follows its write and nothing is lost silently; under load N concurrent
 * writes cost one command instead of N (each costs a table scan and a transaction on FerretDB).
 * A lone write is sent at once, so there is no added latency when traffic is light.
 */
export function createGroupedInserter<T extends Document>(collection: Collection<T>) {
  const queue: Pending<T>[] = [];
  let flushing = false;

  async function write(batch: Pending<T>[]): Promise<void> {
    const docs = batch.flatMap((pending) => pending.docs);
    try {
      if (docs.length === 1) await collection.insertOne(docs[0] as OptionalUnlessRequiredId<T>);
      else await collection.insertMany(docs, { ordered: false });
      for (const pending of batch) pending.resolve();
    } catch (error) {
      // Refused by the driver while serialising (a document over 16 MB: its size check, or a buffer
      // RangeError past 17 MB): that document was never sent and no position is named,
      // so each caller is tried alone and only the one at fault fails.
      if (batch.length > 1 && (error instanceof MongoInvalidArgumentError || error instanceof BSON.BSONError || error instanceof RangeError)) {
        for (const pending of batch) await write([pending]);
        return;
      }
      const failed = docs.length === 1 ? new Set([0]) : failedPositions(error, docs.length);
      let start = 0;
      for (const pending of batch) {
        const end = start + pending.docs.length;
        let refused = false;
        for (let index = start; index < end && !refused; index++) refused = failed.has(index);
        if (refused) pending.reject(error);
        else pending.resolve();
        start = end;
      }
    }
  }

  async function flush(): Promise<void> {
    flushing = true;
    try {
      while (queue.length > 0) await write(takeBatch(queue));
    } finally {
      flushing = false;
    }
  }

  /** Resolves once every one of `docs` is stored; rejects with the database's error when one was not. */
  function insertAll(docs: OptionalUnlessRequiredId<T>[]): Promise<void> {
    if (docs.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      queue.push({ docs, resolve, reject });
      if (!flushing) void flush();
    });
  }

  return {
    insertAll,
    /** Resolves once `doc` is stored; rejects with the database's error when it was not. */
    insert: (doc: OptionalUnlessRequiredId<T>) => insertAll([doc]),
  };
}
