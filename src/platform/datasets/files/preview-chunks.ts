import { CUSTOM_SPLIT_SIGN, splitText } from '../../../domain/text-splitter.js';

/** Chunks a preview returns (the reference's getPreviewChunks shows the first five). */
export const PREVIEW_CHUNK_COUNT = 5;

/**
 * Chunks past the ones returned that a prefix must still yield before its first chunks are taken
 * as the whole text's. The splitter is greedy from the start at every level of its ladder (custom
 * separators, four heading levels, code, tables, paragraphs, lines, five punctuation steps,
 * windows), so cutting the text changes what is built from the cut piece at each level: the last
 * chunks, and at most the one before them per level (a short tail joins the previous chunk). Code
 * blocks are the exception (a fence pairs with the next one however far), so no prefix ends
 * inside one. An argument, not a proof: over 600 random texts of every kind 2 more chunks were
 * always enough; 16 is the margin kept (test/unit/datasets-preview-chunks.test.ts compares
 * random texts with the whole text's split).
 */
const SETTLED_MARGIN = 16;

export interface PreviewSplitOptions {
  chunkLen: number;
  overlapRatio: number;
  customReg: string[];
}

/**
 * Code blocks as the splitter finds them (text-splitter.ts `protectCodeFences`, run on each part
 * between split signs): from a fence to the next one of its kind in the part, however far (an
 * unclosed fence runs to the next block's opening). Inside one no newline cuts, so a prefix
 * ending inside one would be split differently from its start.
 */
const CODE_BLOCK = /```[\s\S]*?```|~~~[\s\S]*?~~~/g;

/** `end`, or the start of the code block it falls in. */
function outsideCodeBlock(text: string, end: number): number {
  let partStart = 0;
  for (;;) {
    const sign = text.indexOf(CUSTOM_SPLIT_SIGN, partStart);
    const partEnd = sign === -1 ? text.length : sign;
    if (end <= partEnd) {
      for (const block of text.slice(partStart, partEnd).matchAll(CODE_BLOCK)) {
        const start = partStart + block.index;
        if (start >= end) break;
        if (start + block[0].length > end) return start;
      }
      return end;
    }
    partStart = partEnd + CUSTOM_SPLIT_SIGN.length;
  }
}

/**
 * Where a prefix of about `length` characters ends: after the last line break in its second half,
 * else at `length` (never inside a surrogate pair); before the code block that would cut.
 */
function prefixEnd(text: string, length: number): number {
  const lineEnd = text.lastIndexOf('\n', length - 1);
  let end = lineEnd >= length / 2 ? lineEnd + 1 : length;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return outsideCodeBlock(text, end);
}

/** Prefix length a preview first tries: enough for the chunks and the margin at four times chunkLen each (the largest a code block keeps whole). */
export function settlingLength(options: PreviewSplitOptions, count = PREVIEW_CHUNK_COUNT): number {
  return Math.max(4096, (count + SETTLED_MARGIN) * options.chunkLen * 4);
}

/**
 * The first `count` chunks of a text, the same as `splitText(whole).chunks.slice(0, count)`, split
 * from a prefix of it: one long enough for `count` chunks and the margin above, doubled until its
 * split has that many chunks. `text` is the whole text (`whole`), where the last resort is to
 * split it all, or only its beginning: then undefined when even all of it does not settle.
 */
export function firstChunks(text: string, options: PreviewSplitOptions, whole: boolean, count = PREVIEW_CHUNK_COUNT): string[] | undefined {
  const split = (part: string) => splitText({ text: part, chunkLen: options.chunkLen, overlapRatio: options.overlapRatio, customReg: options.customReg }).chunks;
  for (let length = settlingLength(options, count); ; length *= 2) {
    if (length >= text.length) {
      if (whole) return split(text).slice(0, count);
      length = text.length;
    }
    const chunks = split(text.slice(0, prefixEnd(text, length)));
    if (chunks.length >= count + SETTLED_MARGIN) return chunks.slice(0, count);
    if (length === text.length) return undefined;
  }
}

/**
 * The first `count` chunks of a whole text (getPreviewChunks): a 10 MB text is not split whole
 * (100,000 chunks of 100 characters) to show five.
 */
export function previewChunks(text: string, options: PreviewSplitOptions, count = PREVIEW_CHUNK_COUNT): string[] {
  return firstChunks(text, options, true, count) ?? [];
}
