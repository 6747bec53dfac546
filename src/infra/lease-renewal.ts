/**
 * Keeps a lease (a lock's or a claim's expiry) alive: calls `renew` every `intervalMs` until
 * stopped. A renewal that fails is not retried early: the next tick tries again, and a holder
 * that keeps failing is taken for dead once its lease runs out, as after a crash. A caller that
 * wants to hear of failures catches them in `renew`. The timer does not keep the process alive.
 */
export function startLeaseRenewal(intervalMs: number, renew: () => Promise<unknown>): { stop(): void } {
  const timer = setInterval(() => void renew().catch(() => undefined), intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** Runs `run` while renewing its lease every `intervalMs` (see startLeaseRenewal); the renewals end when it settles. */
export async function withLeaseRenewal<T>(intervalMs: number, renew: () => Promise<unknown>, run: () => Promise<T>): Promise<T> {
  const renewal = startLeaseRenewal(intervalMs, renew);
  try {
    return await run();
  } finally {
    renewal.stop();
  }
}
