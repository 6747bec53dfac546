/**
 * Keeps a lease (a lock's or a claim's expiry) alive: calls `renew` every `intervalMs` until
 * stopped, one renewal at a time (a tick while one is in flight is skipped). A renewal that fails
 * is not retried early: the next tick tries again, and a holder that keeps failing is taken for
 * dead once its lease runs out, as after a crash. A caller that wants to hear of failures catches
 * them in `renew`. The timer does not keep the process alive.
 *
 * `stop` resolves once the renewal in flight has settled: what the holder writes after it (a
 * released job's lease, a place given back, a lock deleted) is not overtaken by a late renewal
 * moving that lease on again or inserting what was just removed.
 */
export function startLeaseRenewal(intervalMs: number, renew: () => Promise<unknown>): { stop(): Promise<void> } {
  let renewing: Promise<void> | undefined;
  const timer = setInterval(() => {
    renewing ??= renew()
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        renewing = undefined;
      });
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await renewing;
    },
  };
}

/** Runs `run` while renewing its lease every `intervalMs` (see startLeaseRenewal); the renewals end when it settles. */
export async function withLeaseRenewal<T>(intervalMs: number, renew: () => Promise<unknown>, run: () => Promise<T>): Promise<T> {
  const renewal = startLeaseRenewal(intervalMs, renew);
  try {
    return await run();
  } finally {
    await renewal.stop();
  }
}
