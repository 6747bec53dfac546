/**
 * The worker side of runPagedWorkerTask (worker-task.ts): a long answer posted in pages. Each
 * message is copied into the receiving thread as it is taken, on that thread's event loop, and
 * the messages already queued are all taken in one turn; a page posted only when the last one was
 * taken keeps each turn to one page (a 100 MB file's chunks at once held it ~300 ms).
 */
import { parentPort } from 'node:worker_threads';

/** What the parent posts for the next page. */
export const NEXT_PAGE = 'next';

/** One message of a paged answer: part of the items, and whether more follow (then the worker waits for NEXT_PAGE). */
export interface WorkerPage<T> {
  items?: T[];
  more?: boolean;
}

/** A page's bound: about 1 M characters (a couple of ms to copy), and at most 5,000 items. */
export const PAGE_MAX_CHARS = 1_000_000;
export const PAGE_MAX_ITEMS = 5_000;

/**
 * Posts `first` (an answer's other fields) with the first page of `items`, then each next page when
 * the parent asks for it. `chars`: an item's size, in characters.
 */
export function postInPages<T>(first: object, items: T[], chars: (item: T) => number): void {
  let start = 0;
  const nextPage = (): WorkerPage<T> => {
    let end = start;
    let size = 0;
    while (end < items.length && end - start < PAGE_MAX_ITEMS && (end === start || size + chars(items[end]!) <= PAGE_MAX_CHARS)) {
      size += chars(items[end]!);
      end += 1;
    }
    const page = items.slice(start, end);
    start = end;
    return { items: page, more: start < items.length };
  };
  parentPort?.on('message', (message) => {
    if (message === NEXT_PAGE) parentPort?.postMessage(nextPage());
  });
  parentPort?.postMessage({ ...first, ...nextPage() });
}
