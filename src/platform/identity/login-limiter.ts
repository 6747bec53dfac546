/**
 * Counts failed logins per key (an account, an IP) in a sliding window. In memory: one
 * process serves the API; a restart forgets counts, which only favours the user.
 */
export interface LoginLimiterOptions {
  maxFailures: number;
  windowMs: number;
  now: () => number;
}

export class LoginLimiter {
  private readonly failures = new Map<string, number[]>();

  constructor(private readonly options: LoginLimiterOptions) {}

  private recent(key: string): number[] {
    const since = this.options.now() - this.options.windowMs;
    const kept = (this.failures.get(key) ?? []).filter((at) => at > since);
    if (kept.length === 0) this.failures.delete(key);
    else this.failures.set(key, kept);
    return kept;
  }

  /** Seconds until the key may try again, or 0 when it is not blocked. */
  blockedForSeconds(key: string): number {
    const recent = this.recent(key);
    if (recent.length < this.options.maxFailures) return 0;
    const oldestCounted = recent[recent.length - this.options.maxFailures] as number;
    return Math.max(1, Math.ceil((oldestCounted + this.options.windowMs - this.options.now()) / 1000));
  }

  recordFailure(key: string): void {
    const recent = this.recent(key);
    recent.push(this.options.now());
    this.failures.set(key, recent.slice(-this.options.maxFailures));
    if (this.failures.size > 100_000) this.sweep();
  }

  clear(key: string): void {
    this.failures.delete(key);
  }

  /** Drops keys whose failures all left the window, bounding memory. */
  sweep(): void {
    for (const key of [...this.failures.keys()]) this.recent(key);
  }
}
