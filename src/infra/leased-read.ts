/** What a reader trusts without reading: a key's value while the lease it was read under runs at `at`. */
export interface Leases<V> {
  valueAt(key: string, at: number): V | undefined;
}

export interface LeasedReadOptions<V> {
  /** How long after it was sent a read may be trusted: a writer waits this long after writing. */
  leaseMs: number;
  /** The clock of leases (monotonic: a wall clock stepped back must not stretch one). */
  monotonic: () => number;
  /** The leases running; `read` records the one it grants once it has its value. */
  leases: Leases<V>;
  /** Reads the key from the database; a lease it grants runs until `started + leaseMs`. */
  read: (key: string, started: number) => Promise<V>;
}

/**
 * A value read from the database at most once per lease. Callers arriving while a read of the
 * key is in flight share it, but only while its lease would cover them: a read sent before a
 * write that has since resolved may still answer the old value. A failed read grants no lease
 * (its callers get its error); the next caller reads again.
 */
export function createLeasedRead<V>(options: LeasedReadOptions<V>): (key: string) => Promise<V> {
  const inFlight = new Map<string, { started: number; reading: Promise<V> }>();
  return async (key) => {
    const at = options.monotonic();
    const leased = options.leases.valueAt(key, at);
    if (leased !== undefined) return leased;
    const pending = inFlight.get(key);
    if (pending && at < pending.started + options.leaseMs) return pending.reading;
    const reading = options.read(key, at).finally(() => {
      if (inFlight.get(key)?.reading === reading) inFlight.delete(key);
    });
    inFlight.set(key, { started: at, reading });
    return reading;
  };
}
