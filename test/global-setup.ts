import type { TestProject } from 'vitest/node';
// @ts-expect-error plain JavaScript launcher shared with the scripts
import { startLocalDatabase } from '../scripts/local-db.mjs';

declare module 'vitest' {
  export interface ProvidedContext {
    mongoUri: string;
    mongoEngine: string;
  }
}

/** Provides a real database: MONGODB_URI when set, otherwise a fresh local server for this run. */
export default async function setup(project: TestProject) {
  if (process.env.MONGODB_URI) {
    project.provide('mongoUri', process.env.MONGODB_URI);
    project.provide('mongoEngine', 'external');
    return;
  }
  // A database thrown away after the run: its commits need not wait for the disk.
  const db = await startLocalDatabase({ log: (line: string) => console.error(line), flushCommits: false });
  project.provide('mongoUri', db.uri);
  project.provide('mongoEngine', db.engine);
  return async () => {
    await db.stop();
  };
}
