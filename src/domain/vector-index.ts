/**
 * An in-memory exact nearest-neighbour index by cosine similarity. Vectors are normalised on
 * insert and kept in one contiguous Float32Array (one row per slot, padded to a multiple of 8
 * floats; freed slots reused), so a search is a linear scan of dot products plus a bounded
 * min-heap for the top k. From a few thousand vectors on, the rows live in WebAssembly memory
 * and the scan runs as SIMD code (vector-kernel.ts); smaller indexes scan in JavaScript.
 * Storage doubles when full and halves (live rows moved down in order) once under a quarter
 * full, so it follows the live vectors, not their peak, and puts stay amortised O(1).
 */
import { TopK } from './top-k.js';
import { createScoreKernel, type ScoreKernel, WASM_PAGE_BYTES } from './vector-kernel.js';

export interface VectorHit {
  id: string;
  score: number;
}

const MIN_CAPACITY = 64;

/** Below this many slots the scan runs in JavaScript (a WebAssembly memory per small index is not worth it). */
const KERNEL_MIN_SLOTS = 4096;

export class VectorIndex {
  /** Floats per row: the dimensions rounded up to a multiple of 8 (the kernel's step), zero-padded. */
  readonly stride: number;
  private data: Float32Array;
  private capacity = MIN_CAPACITY;
  private kernel: ScoreKernel | null = null;
  private used = 0; // slots ever handed out (high-water mark)
  private readonly slotOf = new Map<string, number>();
  private readonly idAt: (string | undefined)[] = [];
  private readonly freeSlots: number[] = [];

  constructor(readonly dimensions: number) {
    if (!Number.isInteger(dimensions) || dimensions < 1) throw new RangeError(`dimensions must be a positive integer, got ${dimensions}`);
    this.stride = Math.ceil(dimensions / 8) * 8;
    this.data = new Float32Array(this.capacity * this.stride);
  }

  get size(): number {
    return this.slotOf.size;
  }

  /** Rows the storage holds room for (live or not): what its memory is. */
  get capacitySlots(): number {
    return this.capacity;
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
    const offset = slot * this.stride;
    let sum = 0;
    for (let i = 0; i < this.dimensions; i++) sum += vector[i]! * vector[i]!;
    const scale = sum > 0 && Number.isFinite(sum) ? 1 / Math.sqrt(sum) : 0;
    for (let i = 0; i < this.dimensions; i++) this.data[offset + i] = vector[i]! * scale;
  }

  /** Inserts or replaces `ids.length` vectors given as consecutive rows of `dimensions` floats. */
  upsertRows(ids: readonly string[], rows: Float32Array): void {
    if (rows.length !== ids.length * this.dimensions) throw new RangeError(`${ids.length} rows of ${this.dimensions} need ${ids.length * this.dimensions} floats, got ${rows.length}`);
    this.reserve(this.slotOf.size + ids.length);
    for (let i = 0; i < ids.length; i++) this.upsert(ids[i]!, rows.subarray(i * this.dimensions, (i + 1) * this.dimensions));
  }

  remove(id: string): void {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return;
    this.slotOf.delete(id);
    this.idAt[slot] = undefined;
    this.data.fill(0, slot * this.stride, (slot + 1) * this.stride);
    this.freeSlots.push(slot);
    if (this.capacity > MIN_CAPACITY && this.slotOf.size * 4 < this.capacity) this.shrink();
  }

  /** Moves the live rows to the first slots (their order kept, so ties rank alike) in half the storage. */
  private shrink(): void {
    const capacity = this.capacity / 2;
    const floats = capacity * this.stride;
    const kernel = capacity >= KERNEL_MIN_SLOTS ? createScoreKernel((floats + this.stride + capacity) * 4) : null;
    const data = kernel ? new Float32Array(kernel.memory.buffer, 0, floats) : new Float32Array(floats);
    let next = 0;
    for (let slot = 0; slot < this.used; slot++) {
      const id = this.idAt[slot];
      if (id === undefined) continue;
      data.set(this.data.subarray(slot * this.stride, (slot + 1) * this.stride), next * this.stride);
      this.idAt[next] = id;
      this.slotOf.set(id, next);
      next += 1;
    }
    this.idAt.length = next;
    this.freeSlots.length = 0;
    this.used = next;
    this.kernel = kernel;
    this.data = data;
    this.capacity = capacity;
  }

  /** Every stored id with a view of its normalised vector (valid until the next change). */
  *entries(): Generator<[string, Float32Array]> {
    for (let slot = 0; slot < this.used; slot++) {
      const id = this.idAt[slot];
      if (id !== undefined) yield [id, this.data.subarray(slot * this.stride, slot * this.stride + this.dimensions)];
    }
  }

  /**
   * The k most similar vectors (cosine), best first. `filter` can exclude ids; it is called only
   * for candidates that would enter the current top k, and not at all when omitted.
   */
  search(query: ArrayLike<number>, k: number, filter?: (id: string) => boolean): VectorHit[] {
    this.checkLength(query, 'query');
    if (!(k >= 1) || this.slotOf.size === 0) return [];
    let sum = 0;
    for (let i = 0; i < this.dimensions; i++) sum += query[i]! * query[i]!;
    if (!(sum > 0) || !Number.isFinite(sum)) return [];
    const scale = 1 / Math.sqrt(sum);
    const top = new TopK(Math.floor(k));
    const { idAt, used } = this;
    let threshold = top.threshold;
    const offer = (slot: number, score: number) => {
      const id = idAt[slot];
      if (id === undefined || (filter && !filter(id))) return;
      top.offer(score, slot);
      threshold = top.threshold;
    };
    if (this.kernel) {
      const scores = this.kernelScores(query, scale);
      for (let slot = 0; slot < used; slot++) if (scores[slot]! > threshold) offer(slot, scores[slot]!);
    } else {
      const q = new Float32Array(this.stride);
      for (let i = 0; i < this.dimensions; i++) q[i] = query[i]! * scale;
      const { data, stride } = this;
      for (let slot = 0, offset = 0; slot < used; slot++, offset += stride) {
        // Four partial sums let the CPU overlap the multiply-adds.
        let s0 = 0;
        let s1 = 0;
        let s2 = 0;
        let s3 = 0;
        for (let i = 0; i < stride; i += 4) {
          s0 += data[offset + i]! * q[i]!;
          s1 += data[offset + i + 1]! * q[i + 1]!;
          s2 += data[offset + i + 2]! * q[i + 2]!;
          s3 += data[offset + i + 3]! * q[i + 3]!;
        }
        const score = s0 + s1 + s2 + s3;
        if (score > threshold) offer(slot, score);
      }
    }
    return top.drain().map(({ slot, score }) => ({ id: idAt[slot]!, score }));
  }

  /** Runs the SIMD scan: the query goes after the rows, the scores after the query. */
  private kernelScores(query: ArrayLike<number>, scale: number): Float32Array {
    const kernel = this.kernel!;
    const queryOffset = this.capacity * this.stride * 4;
    const q = new Float32Array(kernel.memory.buffer, queryOffset, this.stride);
    q.fill(0);
    for (let i = 0; i < this.dimensions; i++) q[i] = query[i]! * scale;
    const outOffset = queryOffset + this.stride * 4;
    kernel.scores(queryOffset, 0, this.used, this.stride / 8, outOffset);
    return new Float32Array(kernel.memory.buffer, outOffset, this.used);
  }

  private takeNewSlot(): number {
    if (this.used === this.capacity) this.reserve(this.capacity + 1);
    return this.used++;
  }

  /** Grows the storage (doubling) to hold at least `slots` rows; moves into kernel memory when large. */
  private reserve(slots: number): void {
    if (slots <= this.capacity) return;
    let capacity = this.capacity;
    while (capacity < slots) capacity *= 2;
    const floats = capacity * this.stride;
    if (capacity >= KERNEL_MIN_SLOTS) {
      // Rows, then one query row, then one score per row.
      const bytes = (floats + this.stride + capacity) * 4;
      if (!this.kernel) {
        this.kernel = createScoreKernel(bytes);
        this.kernel && new Float32Array(this.kernel.memory.buffer, 0, this.data.length).set(this.data);
      } else {
        const missing = bytes - this.kernel.memory.buffer.byteLength;
        if (missing > 0) this.kernel.memory.grow(Math.ceil(missing / WASM_PAGE_BYTES));
      }
    }
    if (this.kernel) {
      // Growing a memory keeps its bytes in place; only the view is new. New rows are zero.
      this.data = new Float32Array(this.kernel.memory.buffer, 0, floats);
    } else {
      const grown = new Float32Array(floats);
      grown.set(this.data);
      this.data = grown;
    }
    this.capacity = capacity;
  }

  private checkLength(vector: ArrayLike<number>, name: string): void {
    if (vector.length !== this.dimensions) {
      throw new RangeError(`${name} has ${vector.length} dimensions, the index has ${this.dimensions}`);
    }
  }
}
