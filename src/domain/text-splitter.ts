/**
 * Text → chunks, following the reference splitter's ladder of separators (docs/datasets-core.md):
 * custom separators, markdown headings (carried as title prefixes), code fences, table blocks,
 * paragraphs, lines, then sentence punctuation in several scripts; overlap only at the
 * punctuation steps. Lengths are JS string lengths (UTF-16 units), not tokens.
 *
 * Pure and synchronous. `chunkLen` must be a positive finite number: callers validate the
 * request bounds (the reference caps chunk sizes at 30000) and answer 400 before calling; a
 * non-positive value here is a programming error and throws a RangeError. Empty or
 * whitespace-only text gives no chunks.
 */
import { appendAll } from './append-all.js';
import { isMarkdownTable, splitMarkdownTable, splitTableBlocks } from './text-splitter-tables.js';

export { isMarkdownTable } from './text-splitter-tables.js';

/** The literal sign the file parsers put between independent parts (sheets, tables). */
export const CUSTOM_SPLIT_SIGN = '-----CUSTOM_SPLIT_SIGN-----';

export interface SplitTextOptions {
  text: string;
  chunkLen: number;
  /** Share of chunkLen repeated at the start of the next chunk (default 0.2). */
  overlapRatio?: number;
  /**
   * Separators used literally, tried first; each piece they delimit becomes its own chunk, except
   * that a piece of 30 characters or fewer joins the next one (with the separator between them).
   */
  customReg?: string[];
}

export interface SplitTextResult {
  chunks: string[];
  /** Sum of the chunk lengths. */
  chars: number;
}

type StepKind = 'custom' | 'heading' | 'code' | 'table' | 'paragraph' | 'newline' | 'sentence';

interface Step {
  kind: StepKind;
  /** Pattern whose matches delimit pieces (ignored by the 'table' step, which scans lines, and 'custom' ones). */
  pattern: RegExp;
  /** A 'custom' step's separator, used literally. */
  separator?: string;
  /** A piece group may grow to factor × chunkLen at this step before it is split further. */
  factor: number;
}

interface Piece {
  /** Heading line detached from the piece (heading steps only), including its newline. */
  title: string;
  text: string;
}

/** Newlines inside code fences become this private-use character so fences are never cut at line steps. */
const CODE_NEWLINE = '\uE000';
const MIN_EMIT_AT_STRUCTURE = 30;
/**
 * A heading prefixes every chunk of its section, and a table header every chunk of its rows, only
 * up to this many characters (or the chunk length, when longer); a longer one is cut like text:
 * repeated whole, a 100 KB heading over 100 KB of text made 125 M characters of chunks.
 */
const MAX_REPEATED_TITLE = 200;
const repeatLimit = (chunkLen: number) => Math.max(MAX_REPEATED_TITLE, chunkLen);

function buildSteps(customReg: string[]): Step[] {
  const custom: Step[] = customReg
    .filter((separator) => separator.length > 0)
    .map((separator) => ({ kind: 'custom', pattern: /$^/g, separator, factor: 1.4 }));
  const headings: Step[] = [1, 2, 3, 4].map((level) => ({
    kind: 'heading',
    pattern: new RegExp(`^#{${level}}[ \\t][^\\n]*(?:\\n|$)`, 'gm'),
    factor: 1.2,
  }));
  return [
    ...custom,
    ...headings,
    { kind: 'code', pattern: /\n(?=[`~])/g, factor: 4 },
    { kind: 'table', pattern: /$^/g, factor: 2 },
    // A line break that does not start a list item, table row, quote or numbered line.
    { kind: 'paragraph', pattern: /\n(?![ \t]*[*\-|>0-9])/g, factor: 2 },
    { kind: 'newline', pattern: /\n/g, factor: 1.2 },
    // Sentence ends: CJK full stops, Devanagari danda, or a period after a letter/digit/closing mark.
    { kind: 'sentence', pattern: /[。｡．।]|[\p{L}\p{N}"'”’)\]]\.\s/gu, factor: 1.2 },
    { kind: 'sentence', pattern: /[！]|!\s/g, factor: 1.2 },
    { kind: 'sentence', pattern: /[？؟]|\?\s/g, factor: 1.4 },
    { kind: 'sentence', pattern: /[；]|;\s/g, factor: 1.6 },
    { kind: 'sentence', pattern: /[，、،]|,\s/g, factor: 2 },
  ];
}

/**
 * A custom separator's pieces, the separator dropped. A piece of MIN_EMIT_AT_STRUCTURE characters
 * or fewer joins the next, the separator kept between them, as short heading sections do: one
 * chunk per piece made a 20 MB text of one-letter words 10 M chunks (5 s of splitting alone,
 * past the chunk-size floor). Scanned with indexOf: no match object per occurrence.
 */
function splitAtSeparator(text: string, separator: string): Piece[] {
  if (!separator) return [{ title: '', text }];
  const pieces: Piece[] = [];
  let start = 0;
  let from = 0;
  for (;;) {
    const at = text.indexOf(separator, from);
    if (at < 0) break;
    if (at - start > MIN_EMIT_AT_STRUCTURE) {
      pieces.push({ title: '', text: text.slice(start, at) });
      start = at + separator.length;
    }
    from = at + separator.length;
  }
  pieces.push({ title: '', text: text.slice(start) });
  return pieces;
}

/** Cut `text` at the step's separator. Blank pieces are dropped. */
function splitAtStep(text: string, step: Step): Piece[] {
  let pieces: Piece[];
  if (step.kind === 'custom') {
    pieces = splitAtSeparator(text, step.separator ?? '');
  } else if (step.kind === 'table') {
    pieces = splitTableBlocks(text).map((part) => ({ title: '', text: part }));
  } else if (step.kind === 'heading') {
    pieces = [];
    let cursor = 0;
    let title = '';
    for (const match of text.matchAll(step.pattern)) {
      const start = match.index ?? 0;
      if (start > cursor || title) pieces.push({ title, text: text.slice(cursor, start) });
      title = match[0].endsWith('\n') ? match[0] : `${match[0]}\n`;
      cursor = start + match[0].length;
    }
    pieces.push({ title, text: text.slice(cursor) });
    return pieces.filter((piece) => piece.title || piece.text.trim());
  } else {
    pieces = [];
    let cursor = 0;
    for (const match of text.matchAll(step.pattern)) {
      const end = (match.index ?? 0) + match[0].length;
      pieces.push({ title: '', text: text.slice(cursor, end) });
      cursor = end;
    }
    pieces.push({ title: '', text: text.slice(cursor) });
  }
  return pieces.filter((piece) => piece.text.trim());
}

/** Never cut between the two halves of a surrogate pair: move the cut back (`forward` false) or on. */
function safeCut(text: string, index: number, forward = false): number {
  if (index <= 0 || index >= text.length) return Math.max(0, Math.min(index, text.length));
  const code = text.charCodeAt(index);
  if (code < 0xdc00 || code > 0xdfff) return index;
  return forward ? index + 1 : index - 1;
}

class Splitter {
  private readonly steps: Step[];
  private readonly overlapLen: number;
  private readonly firstSentenceStep: number;
  private readonly repeatLimit: number;

  constructor(
    private readonly chunkLen: number,
    overlapRatio: number,
    customReg: string[],
  ) {
    this.steps = buildSteps(customReg);
    const ratio = Number.isFinite(overlapRatio) ? Math.max(0, overlapRatio) : 0;
    this.overlapLen = Math.min(Math.round(chunkLen * ratio), Math.floor(chunkLen * 0.4));
    this.firstSentenceStep = this.steps.findIndex((step) => step.kind === 'sentence');
    this.repeatLimit = repeatLimit(chunkLen);
  }

  split(text: string): string[] {
    return this.recurse(text, 0);
  }

  private recurse(text: string, stepIndex: number): string[] {
    const step = this.steps[stepIndex];
    if (!step) return this.hardCut(text);
    const pieces = splitAtStep(text, step);
    const maxLen = pieces.length > 1 ? step.factor * this.chunkLen : this.chunkLen;
    if (step.kind === 'custom') {
      // Every custom separator applies; past the last one, only oversize pieces are cut further.
      const nextIsCustom = this.steps[stepIndex + 1]?.kind === 'custom';
      return pieces.flatMap((piece) =>
        nextIsCustom || piece.text.length > maxLen ? this.recurse(piece.text, stepIndex + 1) : [piece.text],
      );
    }
    if (step.kind === 'heading') return this.packSections(pieces, stepIndex, maxLen);
    return this.packPieces(pieces, stepIndex, maxLen);
  }

  /** Heading steps: each section stands alone; its heading prefixes every chunk cut from it. */
  private packSections(pieces: Piece[], stepIndex: number, maxLen: number): string[] {
    const chunks: string[] = [];
    let carry = ''; // tiny sections (a lone heading, a one-liner) join the next section
    pieces.forEach((piece, index) => {
      const whole = piece.title + piece.text;
      const isLast = index === pieces.length - 1;
      if (carry.length + whole.length <= maxLen) {
        if (whole.trim().length <= MIN_EMIT_AT_STRUCTURE && !isLast) {
          carry += whole;
          return;
        }
        chunks.push(carry + whole);
        carry = '';
        return;
      }
      if (!piece.text.trim()) {
        // A run of headings without text (a table of contents) is cut at the size like text:
        // carried on without bound, it became one chunk of the whole run.
        if (carry.trim()) chunks.push(carry);
        carry = whole;
        return;
      }
      const cutAsText = piece.title.length > this.repeatLimit;
      const inner = this.recurse(cutAsText ? piece.title + piece.text : piece.text, stepIndex + 1);
      // Copies of the heading never outweigh its section's text (short code lines under a 20 KB
      // heading at chunkLen 30000 made 20 KB per 34 characters): past that it leads the first only.
      const repeatTitle = !cutAsText && inner.length * piece.title.length <= piece.text.length;
      inner.forEach((chunk, at) => {
        const title = repeatTitle || (at === 0 && !cutAsText) ? piece.title : '';
        chunks.push((at === 0 ? carry : '') + title + chunk);
      });
      carry = '';
    });
    if (carry.trim()) chunks.push(carry);
    return chunks;
  }

  /** Code, table, paragraph, line and punctuation steps: pack neighbouring pieces up to the step's size. */
  private packPieces(pieces: Piece[], stepIndex: number, maxLen: number): string[] {
    const step = this.steps[stepIndex]!;
    const minChunk = this.chunkLen * 0.7;
    const chunks: string[] = [];
    let last = '';
    let overlapPart = 0; // leading characters of `last` that repeat the previous chunk
    let tableEnd = -1; // chunks.length right after a table was cut by rows
    const emit = (text: string) => {
      chunks.push(text);
      last = this.overlapOf(text, stepIndex);
      overlapPart = last.length;
    };

    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]!.text;
      if (last.length + piece.length > maxLen) {
        // A table whose header is too long to repeat is cut like text (undefined rows).
        const rows = step.kind === 'table' && isMarkdownTable(piece) ? splitMarkdownTable(piece, this.chunkLen, this.repeatLimit) : undefined;
        if (rows) {
          if (last.length > overlapPart && last.trim()) chunks.push(last);
          appendAll(chunks, rows);
          tableEnd = chunks.length;
          last = '';
          overlapPart = 0;
          continue;
        }
        if (last.length > minChunk) {
          emit(last);
          i--; // retry this piece after the overlap
          continue;
        }
        const inner = this.recurse(last + piece, stepIndex + 1);
        const tail = inner[inner.length - 1];
        if (tail === undefined) continue;
        appendAll(chunks, inner, inner.length - 1);
        if (tail.length < minChunk && step.kind !== 'code') {
          last = tail;
          overlapPart = 0;
        } else emit(tail);
        continue;
      }
      last += piece;
      const structural = step.kind === 'code' || step.kind === 'table';
      if ((structural && last.trim().length > MIN_EMIT_AT_STRUCTURE) || last.length >= this.chunkLen) emit(last);
    }

    const fresh = last.slice(overlapPart);
    if (fresh.trim()) {
      const previous = chunks[chunks.length - 1];
      // A short tail joins the previous chunk, unless that chunk is a row-cut table.
      if (previous === undefined || tableEnd === chunks.length) chunks.push(last);
      else if (fresh.length < this.chunkLen * 0.4) chunks[chunks.length - 1] = previous + fresh;
      else chunks.push(last);
    }
    return chunks;
  }

  /** The trailing sentences of an emitted chunk that start the next one (punctuation steps only). */
  private overlapOf(text: string, stepIndex: number): string {
    const step = this.steps[stepIndex];
    if (!step || this.overlapLen === 0 || this.firstSentenceStep < 0 || stepIndex < this.firstSentenceStep) return '';
    const pieces = splitAtStep(text, step);
    let overlap = '';
    for (let i = pieces.length - 1; i >= 0; i--) {
      const candidate = pieces[i]!.text + overlap;
      if (candidate.length > this.overlapLen) {
        if (candidate.length > this.chunkLen * 0.4) return this.overlapOf(candidate, stepIndex + 1) || overlap;
        return candidate;
      }
      overlap = candidate;
    }
    return overlap;
  }

  /** No separator left: keep moderately long runs whole, window very long ones. */
  private hardCut(text: string): string[] {
    if (text.length < this.chunkLen * 3) return [text];
    const stride = Math.max(1, this.chunkLen - this.overlapLen);
    const chunks: string[] = [];
    let start = 0;
    while (start < text.length) {
      const end = safeCut(text, start + this.chunkLen);
      chunks.push(text.slice(start, end));
      if (end >= text.length) break;
      // With overlap, the last window is a full one ending at the text's end, not a sliver of overlap.
      const last = this.overlapLen > 0 ? text.length - this.chunkLen : text.length;
      const next = safeCut(text, Math.min(start + stride, last), true);
      start = next > start ? next : end;
    }
    return chunks;
  }
}

function protectCodeFences(text: string): string {
  return text.replace(/```[\s\S]*?```|~~~[\s\S]*?~~~/g, (block) => block.replace(/\n/g, CODE_NEWLINE));
}

export function splitText(options: SplitTextOptions): SplitTextResult {
  const { text, chunkLen, overlapRatio = 0.2, customReg = [] } = options;
  if (!Number.isFinite(chunkLen) || chunkLen < 1) throw new RangeError(`chunkLen must be a positive number, got ${chunkLen}`);
  if (!text?.trim()) return { chunks: [], chars: 0 };

  const splitter = new Splitter(chunkLen, overlapRatio, customReg);
  const normalised = text.replace(/\r\n?/g, '\n');
  const chunks: string[] = [];
  // Parts between the parsers' split sign are independent; each is split on its own.
  for (const part of normalised.split(CUSTOM_SPLIT_SIGN)) {
    const trimmed = part.trim();
    if (!trimmed) continue;
    const rows = isMarkdownTable(trimmed) ? splitMarkdownTable(trimmed, chunkLen, repeatLimit(chunkLen)) : undefined;
    if (rows) {
      appendAll(chunks, rows);
      continue;
    }
    const prepared = protectCodeFences(part).replace(/\n{3,}/g, '\n\n\n');
    for (const chunk of splitter.split(prepared)) {
      const restored = chunk.replaceAll(CODE_NEWLINE, '\n').trim();
      if (restored) chunks.push(restored);
    }
  }
  return { chunks, chars: chunks.reduce((sum, chunk) => sum + chunk.length, 0) };
}
