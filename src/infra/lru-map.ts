/** An optional second bound: the entries' summed weight (estimated bytes held, say). */
export interface LruWeight<V> {
  /** Called once when an entry is stored (and by `reweigh`), never on reads or deletes. */
  weigh: (value: V) => number;
  max: number;
  /**
   * An entry heavier than this (default and at most `max`) is not kept and drops nothing else:
   * one oversized value must not empty the map on every request that brings it.
   */
  maxEntry?: number;
  /** Called after the summed weight changed: a map held in another's entry tells its holder to `reweigh` it. */
  onChange?: () => void;
}

/**
 * A map bounded to `max` entries (and, with `weight`, to a summed weight): reading or writing an
 * entry makes it the most recent, and a new entry beyond a bound drops the least recent ones. An
 * entry heavier than `maxEntry` is not kept. `max` 0 keeps nothing.
 */
export class LruMap<V> {
  private readonly entries = new Map<string, V>();
  /** Each entry's weight as weighed when stored, so deletes subtract exactly what was added. */
  private readonly weights = new Map<string, number>();
  /** The most recent key (the map's last), when known: reading it again needs no reordering. */
  private newest: string | undefined;
  private total = 0;

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

  /** The keys, least recent first. */
  keys(): IterableIterator<string> {
    return this.entries.keys();
  }

  /** The entry without making it the most recent. */
  peek(key: string): V | undefined {
    return this.entries.get(key);
  }

  set(key: string, value: V): void {
    if (this.max === 0) return;
    const before = this.total;
    const weight = this.bound ? this.bound.weigh(value) : 0;
    this.remove(key);
    if (!this.bound || weight <= this.entryLimit(this.bound)) {
      this.entries.set(key, value);
      this.newest = key;
      if (this.bound) {
        this.weights.set(key, weight);
        this.total += weight;
      }
      this.evict();
    }
    this.changed(before);
  }

  /**
   * Weighs the entry of `key` again, where it is in the order, after it grew or shrank in place:
   * least recent entries go past the bound, the entry itself past `maxEntry`.
   */
  reweigh(key: string): void {
    const value = this.entries.get(key);
    if (!this.bound || value === undefined) return;
    const before = this.total;
    const weight = this.bound.weigh(value);
    if (weight > this.entryLimit(this.bound)) this.remove(key);
    else {
      this.total += weight - (this.weights.get(key) ?? 0);
      this.weights.set(key, weight);
      this.evict();
    }
    this.changed(before);
  }

  delete(key: string): void {
    const before = this.total;
    this.remove(key);
    this.changed(before);
  }

  clear(): void {
    const before = this.total;
    this.entries.clear();
    this.weights.clear();
    this.newest = undefined;
    this.total = 0;
    this.changed(before);
  }

  get size(): number {
    return this.entries.size;
  }

  /** The summed weight of the entries kept (0 without a weight bound). */
  get weight(): number {
    return this.total;
  }

  private entryLimit(bound: LruWeight<V>): number {
    return Math.min(bound.maxEntry ?? bound.max, bound.max);
  }

  private evict(): void {
    while (this.entries.size > this.max || (this.bound && this.total > this.bound.max && this.entries.size > 0)) {
      this.remove(this.entries.keys().next().value as string);
    }
  }

  private remove(key: string): void {
    if (!this.entries.delete(key)) return;
    if (this.bound) {
      this.total -= this.weights.get(key) ?? 0;
      this.weights.delete(key);
    }
    if (key === this.newest) this.newest = undefined;
  }

  private changed(before: number): void {
    if (this.total !== before) this.bound?.onChange?.();
  }
}
