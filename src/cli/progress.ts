import type { ImportProgress } from '../cluster/nodes/nodes.service.js';

/** Below this many documents an import is quick: it prints only its summary. */
const QUIET_BELOW = 1000;
const MEGABYTE = 1024 * 1024;

/**
 * Progress of a file import as lines for stderr (stdout keeps only the JSON summary): the size
 * read, the count validated, then one line per written chunk with the running total.
 */
export function importProgressLines(label: string, write: (line: string) => void) {
  return {
    read(path: string, bytes: number) {
      if (bytes >= MEGABYTE) write(`${label}: read ${(bytes / MEGABYTE).toFixed(1)} MB from ${path}, validating`);
    },
    progress: ((progress) => {
      if (progress.total < QUIET_BELOW) return;
      if (progress.step === 'validated') write(`${label}: ${progress.total} items valid, writing`);
      else write(`${label}: written ${progress.done}/${progress.total} (${Math.floor((progress.done / progress.total) * 100)}%)`);
    }) satisfies ImportProgress,
  };
}
