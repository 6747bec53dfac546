/**
 * A map bounded to `max` entries: reading or writing an entry makes it the most recent, and a
 * new entry beyond `max` drops the least recent. `max` 0 keeps nothing.
 */
export class LruMap<V> {
  private readonly entries = new Map<string, V>();
  /** The most recent key (the map's last), when known: reading it again needs no reordering. */
  private newest: string | undefined;

  constructor(private readonly max: number) {}

  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined && key !== this.newest) {
      this.entries.delete(key);
      this.entries.set(key, value);
      this.newest = key;
    }
    return value;
  }

  set(key: string, value: V): void {
    if (this.max === 0) return;
    if (!this.entries.delete(key) && this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, value);
    this.newest = key;
  }

  delete(key: string): void {
    this.entries.delete(key);
    if (key === this.newest) this.newest = undefined;
  }

  clear(): void {
    this.entries.clear();
    this.newest = undefined;
  }

  get size(): number {
    return this.entries.size;
  }
}
