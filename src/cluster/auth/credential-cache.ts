/**
 * Resolved credentials of this process, each valid only under the version stamp that was current
 * when it was resolved: a request reads the stamp first, and an entry of another stamp is a miss.
 * Entries are never served across a revocation (the revoking write bumps the stamp), whatever the
 * order in which concurrent requests read and write here. Bounded: the oldest entry goes first.
 */
export class CredentialCache<V> {
  private readonly entries = new Map<string, { stamp: string; value: V }>();

  constructor(private readonly maxEntries = 10_000) {}

  get(stamp: string, key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.stamp === stamp) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  set(stamp: string, key: string, value: V): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { stamp, value });
  }
}
