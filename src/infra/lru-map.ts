/** An optional second bound: the entries' summed weight (characters held, say). */
export interface LruWeight<V> {
  weigh: (value: V) => number;
  max: number;
}

/**
 * A map bounded to `max` entries (and, with `weight`, to a summed weight): reading or writing an
 * entry makes it the most recent, and a new entry beyond a bound drops the least recent ones. An
 * entry heavier than the whole weight bound is not kept. `max` 0 keeps nothing.
 */
export class LruMap<V> {
  private readonly entries = new Map<string, V>();
  /** The most recent key (the map's last), when known: reading it again needs no reordering. */
  private newest: string | undefined;
  private weight = 0;

  constructor(
    private readonly max: number,
    private readonly bound?: LruWeight<V>,
  ) {}

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
    this.delete(key);
    this.entries.set(key, value);
    this.newest = key;
    if (this.bound) this.weight += this.bound.weigh(value);
    while (this.entries.size > this.max || (this.bound && this.weight > this.bound.max)) {
      this.delete(this.entries.keys().next().value as string);
    }
  }

  delete(key: string): void {
    const value = this.entries.get(key);
    if (value === undefined) return;
    this.entries.delete(key);
    if (this.bound) this.weight -= this.bound.weigh(value);
    if (key === this.newest) this.newest = undefined;
  }

  clear(): void {
    this.entries.clear();
    this.newest = undefined;
    this.weight = 0;
  }

  get size(): number {
    return this.entries.size;
  }
}
