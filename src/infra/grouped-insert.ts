import { type Collection, type Document, MongoBulkWriteError, type OptionalUnlessRequiredId } from 'mongodb';

/** The most documents one command carries; a longer queue is written in several. */
const MAX_BATCH = 500;

interface Pending<T> {
  doc: OptionalUnlessRequiredId<T>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** Positions in the batch that were not written: all of them unless the driver names them. */
function failedPositions(error: unknown, size: number): Set<number> {
  if (error instanceof MongoBulkWriteError && !error.err && error.result.getWriteConcernError() === undefined) {
    const errors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
    if (errors.length > 0) return new Set(errors.map((writeError) => writeError.index));
  }
  return new Set(Array.from({ length: size }, (_, index) => index));
}

/**
 * Group commit for append-only records (usage): while one insert is in flight, documents that
 * other requests add wait and go together in the next `insertMany`. Each caller's promise settles
 * when its own document is written, or rejects when that document was not, so an answer still
 * follows its write and nothing is lost silently; under load N concurrent writes cost one
 * command instead of N (each costs a table scan and a transaction on FerretDB). A lone write is
 * sent at once, so there is no added latency when traffic is light.
 */
export function createGroupedInserter<T extends Document>(collection: Collection<T>) {
  let queue: Pending<T>[] = [];
  let flushing = false;

  async function flush(): Promise<void> {
    flushing = true;
    try {
      while (queue.length > 0) {
        const batch = queue.slice(0, MAX_BATCH);
        queue = queue.slice(MAX_BATCH);
        try {
          if (batch.length === 1) await collection.insertOne((batch[0] as Pending<T>).doc);
          else await collection.insertMany(batch.map((pending) => pending.doc), { ordered: false });
          for (const pending of batch) pending.resolve();
        } catch (error) {
          const failed = batch.length === 1 ? new Set([0]) : failedPositions(error, batch.length);
          for (const [index, pending] of batch.entries()) {
            if (failed.has(index)) pending.reject(error);
            else pending.resolve();
          }
        }
      }
    } finally {
      flushing = false;
    }
  }

  return {
    /** Resolves once `doc` is stored; rejects with the database's error when it was not. */
    insert(doc: OptionalUnlessRequiredId<T>): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        queue.push({ doc, resolve, reject });
        if (!flushing) void flush();
      });
    },
  };
}
