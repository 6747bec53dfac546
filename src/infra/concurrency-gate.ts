/**
 * At most `limit` holders at once, without queueing: a caller that finds the gate full is told
 * so at once (and answers "try again"), so a burst never piles up waiting work in memory.
 */
export function createConcurrencyGate(limit: number) {
  let held = 0;
  return {
    /** A release function (idempotent), or null when `limit` holders are already in. */
    tryEnter(): (() => void) | null {
      if (held >= limit) return null;
      held++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        held--;
      };
    },
    get held(): number {
      return held;
    },
  };
}

export type ConcurrencyGate = ReturnType<typeof createConcurrencyGate>;
