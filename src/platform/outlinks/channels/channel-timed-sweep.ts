/**
 * A sweep at a given time (the minute a QPM-deferred channel job waits for), so that the job runs
 * as that minute starts rather than at the periodic sweep, after the minute's new messages took
 * its turns. One timer, for the earliest time asked; it does not keep the process alive.
 */
export function createTimedSweep(now: () => number, sweep: () => void): (when: Date) => void {
  let timed: { at: number; timer: NodeJS.Timeout } | undefined;
  const sweepAt = (when: Date): void => {
    const at = when.getTime();
    if (timed && timed.at <= at) return;
    if (timed) clearTimeout(timed.timer);
    const timer = setTimeout(
      () => {
        timed = undefined;
        // Early by the event loop's cached time (it lags the clock under load): again for the rest.
        if (now() <= at) return sweepAt(when);
        sweep();
      },
      // Past `at`: a job is lapsed once its lease end is before the sweep's now.
      Math.max(0, at - now() + 1),
    );
    timer.unref();
    timed = { at, timer };
  };
  return sweepAt;
}
