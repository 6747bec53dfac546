import { MongoBulkWriteError, MongoServerError } from 'mongodb';
import { type BackoffOptions, backoffDelay } from './backoff.js';
import { isDatabaseUnavailable, type RefusedDocument, refusedDocuments } from './database-errors.js';
import { DUPLICATE_KEY_CODE } from './mongo.js';

/** Inserts documents in one command, unordered (a collection's `insertMany` in production). */
export type InsertMany<T> = (docs: T[]) => Promise<unknown>;

export interface WriteBehindOptions<T> {
  insertMany: InsertMany<T>;
  /** How long a document waits for others to share its insert. */
  windowMs: number;
  /** A batch this large is written at once, without waiting out the window. */
  maxBatch: number;
  /** Waits between attempts while the database is unavailable. */
  retry: BackoffOptions;
  /** Attempts in all before a batch is given up (an outage longer than the retries). */
  attempts: number;
  /**
   * The most documents held (buffered or retrying): beyond it a new document is reported lost at
   * once, so a long outage under heavy traffic cannot exhaust the process's memory.
   */
  maxPending: number;
  /** Told of documents that could not be written, with the error: log them, count them. */
  onLost: (error: unknown, docs: T[]) => void;
}

/**
 * The documents a batch's insert refused, or null when the command failed. A bulk write error is
 * a server error too, so it is read first; a bare duplicate key (a one-document insert) is the first.
 */
function writeErrorsOf(error: unknown): RefusedDocument[] | null {
  const refused = refusedDocuments(error);
  if (refused) return refused;
  const loneDuplicate = error instanceof MongoServerError && !(error instanceof MongoBulkWriteError) && error.code === DUPLICATE_KEY_CODE;
  return loneDuplicate ? [{ index: 0, code: DUPLICATE_KEY_CODE }] : null;
}

/**
 * Records the answer does not wait for (usage ledger entries, which the reference also sends
 * without waiting): `add` buffers a document and returns at once. Documents added within
 * `windowMs` are written together in one unordered insert, so a request costs no round trip and
 * a fraction of a command, whatever the traffic (each command is a transaction and a table scan
 * on FerretDB). A batch is retried while the database is unavailable; each document carries its
 * own `_id`, so a retry never stores one twice (a duplicate key on a retry means "already
 * written"). `drain` writes the buffer now and waits for every batch: the service calls `close`
 * before closing its database client, and tests call `drain` before reading records back.
 */
export function createWriteBehind<T>(options: WriteBehindOptions<T>) {
  let buffer: T[] = [];
  let windowTimer: NodeJS.Timeout | undefined;
  const inFlight = new Set<Promise<void>>();
  let inFlightDocs = 0;
  /** Wakes the batches waiting to retry (closing: they make their last attempt now). */
  const wakers = new Set<() => void>();
  let closing = false;

  function pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        wakers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      wakers.add(wake);
    });
  }

  /** Never throws: a failing report must not become an unhandled rejection of a background write. */
  function report(error: unknown, docs: T[]): void {
    try {
      options.onLost(error, docs);
    } catch {
      // Nothing better can be done with a record whose loss cannot even be reported.
    }
  }

  async function write(batch: T[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await options.insertMany(batch);
        return;
      } catch (error) {
        const writeErrors = writeErrorsOf(error);
        if (writeErrors) {
          // The command ran: the documents it names were refused, the others are stored.
          const refused = writeErrors.filter((entry) => !(attempt > 1 && entry.code === DUPLICATE_KEY_CODE));
          const lost = refused.map((entry) => batch[entry.index]).filter((doc): doc is T => doc !== undefined);
          if (lost.length > 0) report(error, lost);
          return;
        }
        if (closing || attempt >= options.attempts || !isDatabaseUnavailable(error)) {
          report(error, batch);
          return;
        }
        await pause(backoffDelay(attempt, options.retry));
      }
    }
  }

  function flush(): void {
    if (windowTimer) clearTimeout(windowTimer);
    windowTimer = undefined;
    if (buffer.length === 0) return;
    const batch = buffer;
    buffer = [];
    inFlightDocs += batch.length;
    const task: Promise<void> = write(batch).finally(() => {
      inFlight.delete(task);
      inFlightDocs -= batch.length;
    });
    inFlight.add(task);
  }

  async function drain(): Promise<void> {
    flush();
    while (inFlight.size > 0) await Promise.all(inFlight);
  }

  return {
    /** Buffers `doc` for the next batch; never throws, never waits. */
    add(doc: T): void {
      if (buffer.length + inFlightDocs >= options.maxPending) {
        report(new Error(`more than ${options.maxPending} records are waiting to be written`), [doc]);
        return;
      }
      buffer.push(doc);
      if (buffer.length >= options.maxBatch) flush();
      else if (!windowTimer) {
        windowTimer = setTimeout(flush, options.windowMs);
        // A pending window alone does not keep the process alive; shutting down drains it.
        windowTimer.unref();
      }
    },
    /** Writes the buffer now; resolves once every batch so far is written or given up. */
    drain,
    /**
     * Shutting down: the buffer is written now, batches waiting to retry try once more now, and a
     * write that fails from here on is given up (reported through `onLost`) instead of retried.
     */
    async close(): Promise<void> {
      closing = true;
      for (const wake of [...wakers]) wake();
      await drain();
    },
    /** Documents not yet written (buffered or in flight). */
    get pending(): number {
      return buffer.length + inFlightDocs;
    },
  };
}
