/**
 * An in-memory exact nearest-neighbour index by cosine similarity. Vectors are normalised on
 * insert and kept in one contiguous Float32Array (slot per vector, freed slots reused), so a
 * search is a linear scan of dot products plus a bounded min-heap for the top k. At 100,000 ×
 * 256 that is ~25M multiply-adds per query (see docs/datasets-core.md for measured figures).
 */
export interface VectorHit {
  id: string;
  score: number;
}

/** Min-heap on score holding at most `limit` hits: the root is the weakest kept hit. */
class TopK {
  private readonly scores: number[] = [];
  private readonly slots: number[] = [];

  constructor(private readonly limit: number) {}

  get size(): number {
    return this.scores.length;
  }

  /** The score a candidate must beat to enter (−∞ until full). */
  get threshold(): number {
    return this.scores.length < this.limit ? Number.NEGATIVE_INFINITY : this.scores[0]!;
  }

  offer(score: number, slot: number): void {
    if (this.scores.length < this.limit) {
      this.scores.push(score);
      this.slots.push(slot);
      this.siftUp(this.scores.length - 1);
    } else if (score > this.scores[0]!) {
      this.scores[0] = score;
      this.slots[0] = slot;
      this.siftDown(0);
    }
  }

  /** Kept hits, best first. */
  drain(): { slot: number; score: number }[] {
    return this.scores.map((score, i) => ({ score, slot: this.slots[i]! })).sort((a, b) => b.score - a.score || a.slot - b.slot);
  }

  private swap(i: number, j: number): void {
    [this.scores[i], this.scores[j]] = [this.scores[j]!, this.scores[i]!];
    [this.slots[i], this.slots[j]] = [this.slots[j]!, this.slots[i]!];
  }

  private siftUp(index: number): void {
    let i = index;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.scores[parent]! <= this.scores[i]!) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  private siftDown(index: number): void {
    let i = index;
    const n = this.scores.length;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < n && this.scores[left]! < this.scores[smallest]!) smallest = left;
      if (right < n && this.scores[right]! < this.scores[smallest]!) smallest = right;
      if (smallest === i) return;
      this.swap(i, smallest);
      i = smallest;
    }
  }
}

export class VectorIndex {
  private data: Float32Array;
  private capacity: number;
  private used = 0; // slots ever handed out (high-water mark)
  private readonly slotOf = new Map<string, number>();
  private readonly idAt: (string | undefined)[] = [];
  private readonly freeSlots: number[] = [];

  constructor(readonly dimensions: number) {
    if (!Number.isInteger(dimensions) || dimensions < 1) throw new RangeError(`dimensions must be a positive integer, got ${dimensions}`);
    this.capacity = 64;
    this.data = new Float32Array(this.capacity * dimensions);
  }

  get size(): number {
    return this.slotOf.size;
  }

  has(id: string): boolean {
    return this.slotOf.has(id);
  }

  /** Insert or replace the vector of `id` (normalised on the way in; a zero vector scores 0). */
  upsert(id: string, vector: ArrayLike<number>): void {
    this.checkLength(vector, 'vector');
    let slot = this.slotOf.get(id);
    if (slot === undefined) {
      slot = this.freeSlots.pop() ?? this.takeNewSlot();
      this.slotOf.set(id, slot);
      this.idAt[slot] = id;
    }
    const offset = slot * this.dimensions;
    let sum = 0;
    for (let i = 0; i < this.dimensions; i++) sum += vector[i]! * vector[i]!;
    const scale = sum > 0 && Number.isFinite(sum) ? 1 / Math.sqrt(sum) : 0;
    for (let i = 0; i < this.dimensions; i++) this.data[offset + i] = vector[i]! * scale;
  }

  remove(id: string): void {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return;
    this.slotOf.delete(id);
    this.idAt[slot] = undefined;
    this.data.fill(0, slot * this.dimensions, (slot + 1) * this.dimensions);
    this.freeSlots.push(slot);
  }

  /** The k most similar vectors (cosine), best first; `filter` can exclude ids. */
  search(query: ArrayLike<number>, k: number, filter?: (id: string) => boolean): VectorHit[] {
    this.checkLength(query, 'query');
    if (!(k >= 1) || this.slotOf.size === 0) return [];
    const q = new Float32Array(this.dimensions);
    let sum = 0;
    for (let i = 0; i < this.dimensions; i++) sum += query[i]! * query[i]!;
    if (!(sum > 0) || !Number.isFinite(sum)) return [];
    const scale = 1 / Math.sqrt(sum);
    for (let i = 0; i < this.dimensions; i++) q[i] = query[i]! * scale;

    const top = new TopK(Math.floor(k));
    const { data, dimensions, idAt } = this;
    const used = this.used;
    const tail = dimensions - (dimensions % 4);
    let threshold = top.threshold;
    for (let slot = 0, offset = 0; slot < used; slot++, offset += dimensions) {
      // Four partial sums let the CPU overlap the multiply-adds.
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      let i = 0;
      for (; i < tail; i += 4) {
        s0 += data[offset + i]! * q[i]!;
        s1 += data[offset + i + 1]! * q[i + 1]!;
        s2 += data[offset + i + 2]! * q[i + 2]!;
        s3 += data[offset + i + 3]! * q[i + 3]!;
      }
      for (; i < dimensions; i++) s0 += data[offset + i]! * q[i]!;
      const score = s0 + s1 + s2 + s3;
      if (score <= threshold) continue;
      const id = idAt[slot];
      if (id === undefined) continue;
      if (filter && !filter(id)) continue;
      top.offer(score, slot);
      threshold = top.threshold;
    }
    return top.drain().map(({ slot, score }) => ({ id: idAt[slot]!, score }));
  }

  private takeNewSlot(): number {
    if (this.used === this.capacity) {
      this.capacity *= 2;
      const grown = new Float32Array(this.capacity * this.dimensions);
      grown.set(this.data);
      this.data = grown;
    }
    return this.used++;
  }

  private checkLength(vector: ArrayLike<number>, name: string): void {
    if (vector.length !== this.dimensions) {
      throw new RangeError(`${name} has ${vector.length} dimensions, the index has ${this.dimensions}`);
    }
  }
}
