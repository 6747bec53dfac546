import { TopK } from './top-k.js';

/**
 * An in-memory inverted index ranking documents by Okapi BM25 (k1 1.2, b 0.75, the non-negative
 * IDF ln(1 + (N − df + 0.5) / (df + 0.5))), scoring straight from posting lists: a query touches
 * only the postings of its own terms, never the other tokens of the candidate documents.
 * Repeated terms are counted, though data items give distinct tokens (full-text.ts), so their
 * term frequencies are all 1.
 *
 * Documents live in integer slots. A posting is the slot, or, when the term occurs more than
 * once in the document, −(slot + 1) followed by the count. Removing a document only marks its
 * slot dead (the postings are skipped at query time) and updates the document frequencies;
 * postings are rebuilt once dead slots are a quarter of all slots, or once terms no live
 * document uses outnumber both the live terms and 1,000 (a rebuild keeps only terms in use, so
 * replacing documents with new words does not grow the index without bound).
 */
export interface TextHit {
  id: string;
  score: number;
}

/**
 * An index as plain data (snapshots): the terms in use, and per document (in `ids` order)
 * unsigned LEB128 numbers: its token count, its number of distinct terms, then per term
 * (term position × 2 + 1 when it repeats), followed by the repeat count when it does.
 */
export interface TextIndexState {
  terms: string[];
  ids: string[];
  documents: Uint8Array;
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
  /** Terms with a live document (df > 0); the rest of `termIds` are dead until a rebuild. */
  private liveTerms = 0;
  /** Per-slot score scratch, reused by queries and zeroed after each. */
  private scores = new Float64Array(0);
  /** Scratch per term for counting repeats while a document is added. */
  private markOf: number[] = [];
  private positionOf: number[] = [];
  private putCount = 0;
  private scratchTerms = new Int32Array(256);
  private scratchCounts = new Uint16Array(256);

  get size(): number {
    return this.slotOf.size;
  }

  has(id: string): boolean {
    return this.slotOf.has(id);
  }

  /** Terms held, in use or not (what the index's memory grows with). */
  get heldTerms(): number {
    return this.termIds.size;
  }

  /** Terms held that no live document uses (dropped by the next rebuild). */
  get deadTerms(): number {
    return this.termIds.size - this.liveTerms;
  }

  /** Adds or replaces a document; `tokens` keeps repeats (they are its term frequencies). */
  put(id: string, tokens: readonly string[]): void {
    this.remove(id);
    const mark = ++this.putCount;
    let distinct = 0;
    if (this.scratchTerms.length < tokens.length) {
      this.scratchTerms = new Int32Array(tokens.length * 2);
      this.scratchCounts = new Uint16Array(tokens.length * 2);
    }
    const { scratchTerms, scratchCounts, markOf, positionOf } = this;
    for (const token of tokens) {
      const term = this.termId(token);
      // A repeat of a term already seen in this document is found through the term's mark.
      if (markOf[term] === mark) {
        const at = positionOf[term]!;
        if (scratchCounts[at]! < 65_535) scratchCounts[at]! += 1;
      } else {
        markOf[term] = mark;
        positionOf[term] = distinct;
        scratchTerms[distinct] = term;
        scratchCounts[distinct] = 1;
        distinct += 1;
      }
    }
    this.addDocument(id, scratchTerms.slice(0, distinct), scratchCounts.slice(0, distinct), tokens.length);
  }

  private termId(token: string): number {
    let term = this.termIds.get(token);
    if (term === undefined) {
      term = this.postings.length;
      this.termIds.set(token, term);
      this.postings.push(new Int32Array(4));
      this.postingLengths.push(0);
      this.docFrequency.push(0);
    }
    return term;
  }

  private addDocument(id: string, terms: Int32Array, counts: Uint16Array, length: number): void {
    const slot = this.idAt.length;
    this.idAt.push(id);
    this.termsAt.push(terms);
    this.countsAt.push(counts);
    this.lengthAt.push(length);
    this.slotOf.set(id, slot);
    this.totalLength += length;
    for (let i = 0; i < terms.length; i++) {
      if (this.docFrequency[terms[i]!]! === 0) this.liveTerms += 1;
      this.docFrequency[terms[i]!]! += 1;
      this.appendPosting(terms[i]!, slot, counts[i]!);
    }
  }

  remove(id: string): void {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return;
    this.slotOf.delete(id);
    for (const term of this.termsAt[slot]!) {
      this.docFrequency[term]! -= 1;
      if (this.docFrequency[term] === 0) this.liveTerms -= 1;
    }
    this.totalLength -= this.lengthAt[slot]!;
    this.idAt[slot] = undefined;
    this.termsAt[slot] = undefined;
    this.countsAt[slot] = undefined;
    this.dead += 1;
    const deadTerms = this.termIds.size - this.liveTerms;
    if ((this.dead > 1000 && this.dead * 4 > this.idAt.length) || deadTerms > Math.max(1000, this.liveTerms)) this.rebuild();
  }

  /**
   * The k best documents for the query terms (distinct terms count once), best first; ties keep
   * insertion order. `exclude` is asked only about documents that would enter the top k. Of more
   * than `maxTerms` known terms only the `maxTerms` rarest (highest idf; earlier ones on a tie)
   * are scored: the work is the postings of the terms scored, and a common term adds almost
   * nothing to a score.
   */
  search(queryTokens: readonly string[], k: number, exclude?: (id: string) => boolean, maxTerms = Number.POSITIVE_INFINITY): TextHit[] {
    const documents = this.slotOf.size;
    if (!(k >= 1) || documents === 0) return [];
    const avgLength = this.totalLength / documents > 0 ? this.totalLength / documents : 1;
    if (this.scores.length < this.idAt.length) this.scores = new Float64Array(this.idAt.length * 2);
    const { scores } = this;
    const touched: number[] = [];
    for (const term of this.queryTerms(queryTokens, maxTerms)) {
      const df = this.docFrequency[term]!;
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
    const top = new TopK(Math.floor(k));
    for (const slot of touched) {
      const score = scores[slot]!;
      scores[slot] = 0; // the scratch is clean for the next query
      if (score > 0 && score >= top.threshold && !exclude?.(this.idAt[slot]!)) top.offer(score, slot);
    }
    return top.drain().map(({ slot, score }) => ({ id: this.idAt[slot]!, score }));
  }

  /** The distinct known terms of a query in its order, at most `maxTerms` of them, the rarest kept. */
  private queryTerms(queryTokens: readonly string[], maxTerms: number): number[] {
    const terms: number[] = [];
    for (const token of new Set(queryTokens)) {
      const term = this.termIds.get(token);
      if (term !== undefined && this.docFrequency[term]! > 0) terms.push(term);
    }
    if (terms.length <= maxTerms) return terms;
    const kept = new Set(terms.map((term, position) => ({ term, position })).sort((x, y) => this.docFrequency[x.term]! - this.docFrequency[y.term]! || x.position - y.position).slice(0, Math.max(0, Math.floor(maxTerms))).map((entry) => entry.term));
    // Scored in query order, as without a cap (the sums stay the same to the last bit).
    return terms.filter((term) => kept.has(term));
  }

  /** The live documents and the terms they use, compactly (see TextIndexState). */
  exportState(): TextIndexState {
    const renumbered = new Int32Array(this.postings.length).fill(-1);
    const terms: string[] = [];
    for (const [token, term] of this.termIds) {
      if (this.docFrequency[term]! > 0) {
        renumbered[term] = terms.length;
        terms.push(token);
      }
    }
    const ids: string[] = [];
    const out = new VarintWriter();
    for (let slot = 0; slot < this.idAt.length; slot++) {
      const id = this.idAt[slot];
      if (id === undefined) continue;
      const docTerms = this.termsAt[slot]!;
      const counts = this.countsAt[slot]!;
      ids.push(id);
      out.write(this.lengthAt[slot]!);
      out.write(docTerms.length);
      for (let i = 0; i < docTerms.length; i++) {
        const repeated = counts[i]! > 1;
        out.write(renumbered[docTerms[i]!]! * 2 + (repeated ? 1 : 0));
        if (repeated) out.write(counts[i]!);
      }
    }
    return { terms, ids, documents: out.bytes() };
  }

  /** The index a state describes (posting lists sized exactly, no tokenising). */
  static fromState(state: TextIndexState): TextIndex {
    const index = new TextIndex();
    const termCount = state.terms.length;
    for (const [term, token] of state.terms.entries()) index.termIds.set(token, term);
    index.docFrequency = new Array<number>(termCount).fill(0);
    const postingSizes = new Int32Array(termCount);
    const documents: { terms: Int32Array; counts: Uint16Array; length: number }[] = [];
    const input = new VarintReader(state.documents);
    for (let doc = 0; doc < state.ids.length; doc++) {
      const length = input.read();
      const distinct = input.read();
      const terms = new Int32Array(distinct);
      const counts = new Uint16Array(distinct);
      for (let i = 0; i < distinct; i++) {
        const value = input.read();
        const term = value >>> 1;
        const count = value & 1 ? input.read() : 1;
        if (term >= termCount) throw new RangeError(`document ${doc} refers to term ${term} of ${termCount}`);
        terms[i] = term;
        counts[i] = Math.min(count, 65_535);
        postingSizes[term]! += count > 1 ? 2 : 1;
      }
      documents.push({ terms, counts, length });
    }
    index.postings = Array.from(postingSizes, (size) => new Int32Array(Math.max(size, 1)));
    index.postingLengths = new Array<number>(termCount).fill(0);
    for (const [doc, { terms, counts, length }] of documents.entries()) index.addDocument(state.ids[doc]!, terms, counts, length);
    return index;
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

  /**
   * Renumbers the live documents into consecutive slots and the terms they use into consecutive
   * ids (dropping the others, as exportState does), and rebuilds every posting list at its exact
   * size. Slot order and query-term order are kept, so every score and tie order stays the same.
   */
  private rebuild(): void {
    const live = [...this.slotOf.entries()].sort((x, y) => x[1] - y[1]);
    const renumbered = new Int32Array(this.postings.length).fill(-1);
    const kept = [...this.termIds].filter(([, term]) => this.docFrequency[term]! > 0);
    this.termIds.clear();
    const docFrequency: number[] = [];
    for (const [token, term] of kept) {
      renumbered[term] = docFrequency.length;
      this.termIds.set(token, docFrequency.length);
      docFrequency.push(this.docFrequency[term]!);
    }
    const postingSizes = new Int32Array(docFrequency.length);
    for (const [, oldSlot] of live) {
      const terms = this.termsAt[oldSlot]!;
      const counts = this.countsAt[oldSlot]!;
      for (let i = 0; i < terms.length; i++) {
        terms[i] = renumbered[terms[i]!]!; // the slot's own array: nothing else holds it
        postingSizes[terms[i]!]! += counts[i]! > 1 ? 2 : 1;
      }
    }
    const previous = { terms: this.termsAt, counts: this.countsAt, lengths: this.lengthAt };
    this.docFrequency = docFrequency;
    this.liveTerms = docFrequency.length;
    this.postings = Array.from(postingSizes, (size) => new Int32Array(Math.max(size, 1)));
    this.postingLengths = new Array<number>(docFrequency.length).fill(0);
    this.markOf = [];
    this.positionOf = [];
    this.scores = new Float64Array(0);
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

class VarintWriter {
  private buffer = new Uint8Array(1024);
  private length = 0;

  write(value: number): void {
    if (this.length + 5 > this.buffer.length) {
      const grown = new Uint8Array(this.buffer.length * 2);
      grown.set(this.buffer);
      this.buffer = grown;
    }
    let n = value >>> 0;
    while (n >= 0x80) {
      this.buffer[this.length++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    this.buffer[this.length++] = n;
  }

  bytes(): Uint8Array {
    return this.buffer.slice(0, this.length);
  }
}

class VarintReader {
  private offset = 0;

  constructor(private readonly bytes: Uint8Array) {}

  read(): number {
    let value = 0;
    let shift = 0;
    for (;;) {
      if (this.offset >= this.bytes.length) throw new RangeError('text index state ends in the middle of a number');
      const byte = this.bytes[this.offset++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
      shift += 7;
    }
  }
}
