/**
 * The best `limit` (score, slot) pairs seen, in a min-heap whose root is the weakest kept pair.
 * Higher scores are better; among equal scores the lower slot wins, so the result is the same
 * whatever order candidates are offered in (ties keep insertion order when slots follow it).
 */
export class TopK {
  private readonly scores: number[] = [];
  private readonly slots: number[] = [];

  constructor(private readonly limit: number) {}

  get size(): number {
    return this.scores.length;
  }

  /** The score a candidate must reach to be considered (−∞ until full). */
  get threshold(): number {
    return this.scores.length < this.limit ? Number.NEGATIVE_INFINITY : this.scores[0]!;
  }

  offer(score: number, slot: number): void {
    if (this.limit < 1) return;
    if (this.scores.length < this.limit) {
      this.scores.push(score);
      this.slots.push(slot);
      this.siftUp(this.scores.length - 1);
    } else if (this.worse(0, score, slot)) {
      this.scores[0] = score;
      this.slots[0] = slot;
      this.siftDown(0);
    }
  }

  /** Kept pairs, best first. */
  drain(): { slot: number; score: number }[] {
    return this.scores.map((score, i) => ({ score, slot: this.slots[i]! })).sort((a, b) => b.score - a.score || a.slot - b.slot);
  }

  /** Whether the kept pair at `i` ranks below (score, slot). */
  private worse(i: number, score: number, slot: number): boolean {
    return this.scores[i]! < score || (this.scores[i] === score && this.slots[i]! > slot);
  }

  private swap(i: number, j: number): void {
    [this.scores[i], this.scores[j]] = [this.scores[j]!, this.scores[i]!];
    [this.slots[i], this.slots[j]] = [this.slots[j]!, this.slots[i]!];
  }

  private siftUp(index: number): void {
    let i = index;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.worse(i, this.scores[parent]!, this.slots[parent]!)) break;
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
      let weakest = i;
      if (left < n && this.worse(left, this.scores[weakest]!, this.slots[weakest]!)) weakest = left;
      if (right < n && this.worse(right, this.scores[weakest]!, this.slots[weakest]!)) weakest = right;
      if (weakest === i) return;
      this.swap(i, weakest);
      i = weakest;
    }
  }
}
