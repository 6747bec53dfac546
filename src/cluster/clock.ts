/**
 * The cluster module's notion of "now". Token lifetimes, login blocking and cleanup all read it,
 * so tests (and operators reproducing an incident) can move time instead of sleeping.
 */
export interface Clock {
  now(): Date;
}

export class MovableClock implements Clock {
  private offsetMs = 0;

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  /** Moves this clock forward (or back, with a negative value). */
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}
