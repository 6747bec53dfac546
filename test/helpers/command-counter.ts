import type { FastifyInstance } from 'fastify';
import type { CommandStartedEvent } from 'mongodb';

/** Driver housekeeping, not work a request asked for. */
const HOUSEKEEPING = new Set(['hello', 'ismaster', 'isMaster', 'ping', 'endSessions', 'saslStart', 'saslContinue', 'killCursors']);

export interface RecordedCommand {
  name: string;
  collection: string;
  /** The string `_id` a find or update targets (version stamp keys, e.g. `apps:<teamId>`). */
  key?: string;
}

function targetKey(command: Record<string, unknown>): string | undefined {
  const filter = (command.filter ?? (command.updates as { q?: unknown }[] | undefined)?.[0]?.q) as { _id?: unknown } | undefined;
  return typeof filter?._id === 'string' ? filter._id : undefined;
}

/**
 * Records the database commands the app sends while `run` executes (the cost that matters on
 * FerretDB, where each command scans a table). Each entry names the command and its collection.
 * Commands of background loops running meanwhile are counted too: build the app with them off.
 */
export async function commandsDuring(app: FastifyInstance, run: () => Promise<unknown>): Promise<RecordedCommand[]> {
  const client = app.mongo.client;
  const recorded: RecordedCommand[] = [];
  const listener = (event: CommandStartedEvent) => {
    if (HOUSEKEEPING.has(event.commandName)) return;
    const target = event.command[event.commandName];
    const key = targetKey(event.command);
    recorded.push({ name: event.commandName, collection: typeof target === 'string' ? target : '', ...(key ? { key } : {}) });
  };
  if (!client.options.monitorCommands) throw new Error('the test database URI must carry monitorCommands=true (freshDatabaseUri does)');
  // Writes earlier requests left behind their answers (usage records) are theirs, not `run`'s.
  await app.identity?.usage.drain();
  client.on('commandStarted', listener);
  try {
    await run();
    // Writes a request leaves behind (usage records, written after the answer) are its cost too.
    await app.identity?.usage.drain();
  } finally {
    client.off('commandStarted', listener);
  }
  return recorded;
}

/** The filters of the finds on `collection` that the app sends while `run` executes. */
export async function findFiltersDuring(app: FastifyInstance, collection: string, run: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const filters: Record<string, unknown>[] = [];
  const listener = (event: CommandStartedEvent) => {
    if (event.commandName === 'find' && event.command.find === collection) filters.push(event.command.filter as Record<string, unknown>);
  };
  app.mongo.client.on('commandStarted', listener);
  try {
    await run();
  } finally {
    app.mongo.client.off('commandStarted', listener);
  }
  return filters;
}
