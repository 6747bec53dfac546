/**
 * `start(signal)`'s answer, or a rejection with `reasonOf(signal)` as soon as `signal` aborts (and not
 * started at all once aborted). A failure of the call after the abort is the abort's reason too:
 * the caller stopped listening, so what the call did then is not its answer. Without a signal,
 * the call as it is.
 */
export function raceAbort<T>(signal: AbortSignal | undefined, start: (signal?: AbortSignal) => Promise<T>, reasonOf: (signal: AbortSignal) => Error): Promise<T> {
  if (!signal) return start();
  if (signal.aborted) return Promise.reject(reasonOf(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(reasonOf(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    const settle = () => signal.removeEventListener('abort', onAbort);
    let running: Promise<T>;
    try {
      running = start(signal);
    } catch (error) {
      settle();
      reject(error);
      return;
    }
    running.then(
      (value) => {
        settle();
        resolve(value);
      },
      (error: unknown) => {
        settle();
        reject(signal.aborted ? reasonOf(signal) : error);
      },
    );
  });
}
