/**
 * An in-memory inverted index ranking documents by Okapi BM25, with the same formula as
 * `bm25Scores` (full-text.ts) but scoring straight from posting lists: a query touches only the
 * postings of its own terms, never the other tokens of the candidate documents.
 *
 * Documents live in integer slots. A posting is the slot, or, when the term occurs more than
 * once in the document, −(slot + 1) followed by the count. Removing a document only marks its
 * slot dead (the postings are skipped at query time) and updates the document frequencies;
 * postings are rebuilt once dead slots are a quarter of all slots.
 */
export interface TextHit {
  id: string;
  score: number;
}

const K1 = 1.2;
const B = 0.75;

export class TextIndex {
  private readonly termIds = new Map<string, number>();
  private postings: Int32Array[] = [];
  private postingLengths: number[] = [];
  /** Live documents holding the term. */
  private docFrequency: number[] = [];
  private readonly slotOf = new Map<string, number>();
  private idAt: (string | undefined)[] = [];
  /** Distinct term ids and their counts per slot (to undo a document's statistics). */
  private termsAt: (Int32Array | undefined)[] = [];
  private countsAt: (Uint16Array | undefined)[] = [];
  private lengthAt: number[] = [];
  private totalLength = 0;
  private dead = 0;

  get size(): number {
    return this.slotOf.size;
  }

  has(id: string): boolean {
    return this.slotOf.has(id);
  }

  /** Adds or replaces a document; `tokens` keeps repeats (they are its term frequencies). */
  put(id: string, tokens: readonly string[]): void {
    this.remove(id);
    const counts = new Map<number, number>();
    for (const token of tokens) {
      let term = this.termIds.get(token);
      if (term === undefined) {
        term = this.postings.length;
        this.termIds.set(token, term);
        this.postings.push(new Int32Array(4));
        this.postingLengths.push(0);
        this.docFrequency.push(0);
      }
      counts.set(term, (counts.get(term) ?? 0) + 1);
    }
    const slot = this.idAt.length;
    const terms = Int32Array.from(counts.keys());
    const frequencies = Uint16Array.from(counts.values(), (count) => Math.min(count, 65_535));
    this.idAt.push(id);
    this.termsAt.push(terms);
    this.countsAt.push(frequencies);
    this.lengthAt.push(tokens.length);
    this.slotOf.set(id, slot);
    this.totalLength += tokens.length;
    for (let i = 0; i < terms.length; i++) {
      this.docFrequency[terms[i]!]! += 1;
      this.appendPosting(terms[i]!, slot, frequencies[i]!);
    }
  }

  remove(id: string): void {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return;
    this.slotOf.delete(id);
    for (const term of this.termsAt[slot]!) this.docFrequency[term]! -= 1;
    this.totalLength -= this.lengthAt[slot]!;
    this.idAt[slot] = undefined;
    this.termsAt[slot] = undefined;
    this.countsAt[slot] = undefined;
    this.dead += 1;
    if (this.dead > 1000 && this.dead * 4 > this.idAt.length) this.rebuild();
  }

  /**
   * The k best documents for the query terms (distinct terms count once), best first; ties keep
   * insertion order. `exclude` is asked only about documents that scored.
   */
  search(queryTokens: readonly string[], k: number, exclude?: (id: string) => boolean): TextHit[] {
    const documents = this.slotOf.size;
    if (!(k >= 1) || documents === 0) return [];
    const avgLength = this.totalLength / documents > 0 ? this.totalLength / documents : 1;
    const scores = new Float64Array(this.idAt.length);
    const touched: number[] = [];
    for (const token of new Set(queryTokens)) {
      const term = this.termIds.get(token);
      if (term === undefined) continue;
      const df = this.docFrequency[term]!;
      if (df === 0) continue;
      const idf = Math.log(1 + (documents - df + 0.5) / (df + 0.5));
      const list = this.postings[term]!;
      const length = this.postingLengths[term]!;
      for (let i = 0; i < length; i++) {
        let slot = list[i]!;
        let tf = 1;
        if (slot < 0) {
          slot = -slot - 1;
          tf = list[++i]!;
        }
        if (this.idAt[slot] === undefined) continue;
        if (scores[slot] === 0) touched.push(slot);
        scores[slot]! += (idf * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * this.lengthAt[slot]!) / avgLength));
      }
    }
    const ranked = touched.filter((slot) => scores[slot]! > 0 && !exclude?.(this.idAt[slot]!));
    ranked.sort((x, y) => scores[y]! - scores[x]! || x - y);
    return ranked.slice(0, Math.floor(k)).map((slot) => ({ id: this.idAt[slot]!, score: scores[slot]! }));
  }

  private appendPosting(term: number, slot: number, tf: number): void {
    let list = this.postings[term]!;
    const length = this.postingLengths[term]!;
    const needed = length + (tf > 1 ? 2 : 1);
    if (needed > list.length) {
      const grown = new Int32Array(Math.max(needed, list.length * 2));
      grown.set(list);
      list = grown;
      this.postings[term] = grown;
    }
    if (tf > 1) {
      list[length] = -slot - 1;
      list[length + 1] = tf;
    } else {
      list[length] = slot;
    }
    this.postingLengths[term] = needed;
  }

  /** Renumbers the live documents into consecutive slots and rebuilds every posting list. */
  private rebuild(): void {
    const live = [...this.slotOf.entries()].sort((x, y) => x[1] - y[1]);
    const previous = { terms: this.termsAt, counts: this.countsAt, lengths: this.lengthAt };
    this.postings = this.postings.map(() => new Int32Array(4));
    this.postingLengths = this.postingLengths.map(() => 0);
    this.idAt = [];
    this.termsAt = [];
    this.countsAt = [];
    this.lengthAt = [];
    this.dead = 0;
    for (const [id, oldSlot] of live) {
      const slot = this.idAt.length;
      const terms = previous.terms[oldSlot]!;
      const counts = previous.counts[oldSlot]!;
      this.idAt.push(id);
      this.termsAt.push(terms);
      this.countsAt.push(counts);
      this.lengthAt.push(previous.lengths[oldSlot]!);
      this.slotOf.set(id, slot);
      for (let i = 0; i < terms.length; i++) this.appendPosting(terms[i]!, slot, counts[i]!);
    }
  }
}
