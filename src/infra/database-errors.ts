import {
  MongoBulkWriteError,
  MongoClientClosedError,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from 'mongodb';

/**
 * Server error codes that mean "this server cannot serve now" (shutting down, stepping down, not
 * reachable): the driver's own retryable set, minus time limits that a slow query also hits.
 */
const UNAVAILABLE_SERVER_CODES = new Set([
  6, // HostUnreachable
  7, // HostNotFound
  89, // NetworkTimeout
  91, // ShutdownInProgress
  133, // FailedToSatisfyReadPreference
  189, // PrimarySteppedDown
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);

/** Pool errors the driver does not export (matched by name). */
const UNAVAILABLE_NAMES = new Set(['MongoPoolClosedError', 'MongoPoolClearedError', 'PoolClearedOnNetworkError', 'MongoWaitQueueTimeoutError']);

function isUnavailableItself(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoTopologyClosedError ||
    error instanceof MongoClientClosedError ||
    error instanceof MongoOperationTimeoutError
  ) {
    return true;
  }
  if (UNAVAILABLE_NAMES.has(error.name)) return true;
  return error instanceof MongoServerError && typeof error.code === 'number' && UNAVAILABLE_SERVER_CODES.has(error.code);
}

/**
 * Whether an error means the database could not be reached or cannot serve right now (an
 * outage: the same request may succeed later), as opposed to a bad query or a bug. Follows
 * `cause` a few levels, since start-up and some services wrap what they catch.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth++) {
    if (isUnavailableItself(current)) return true;
    current = current instanceof Error ? current.cause : undefined;
  }
  return false;
}

/** A document a bulk insert refused: its position in the batch and the server's error code. */
export interface RefusedDocument {
  index: number;
  code?: number;
}

/**
 * The documents an unordered bulk insert refused while storing the others (duplicate keys,
 * validation), or null when the command as a whole failed and any of them may be missing.
 */
export function refusedDocuments(error: unknown): RefusedDocument[] | null {
  if (!(error instanceof MongoBulkWriteError) || error.err || error.result.getWriteConcernError() !== undefined) return null;
  const list = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
  return list.length > 0 ? list.map((entry) => ({ index: entry.index, code: entry.code })) : null;
}

/**
 * One readable line about an error: its class, code and message. Never the object itself: driver
 * errors carry the whole topology (circular), which loggers cannot serialise.
 */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  const codeText = code !== undefined && code !== null ? ` (code ${String(code)})` : '';
  return `${error.name}${codeText}: ${error.message}`;
}

/**
 * What a log line should hold about an error: plain fields only. Used as the logger's `err`
 * serializer for driver errors, whose enumerable fields reference the live topology.
 */
export function databaseErrorFields(error: Error): Record<string, unknown> {
  const { code, codeName, errorLabelSet } = error as { code?: unknown; codeName?: unknown; errorLabelSet?: Set<string> };
  return {
    type: error.name,
    message: error.message,
    ...(code !== undefined ? { code } : {}),
    ...(typeof codeName === 'string' ? { codeName } : {}),
    ...(errorLabelSet && errorLabelSet.size > 0 ? { labels: [...errorLabelSet] } : {}),
    stack: error.stack,
  };
}
