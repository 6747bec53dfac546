/**
 * QA training (docs/datasets.md): a language model reads a chunk and writes question/answer
 * pairs in the numbered `Q1: … A1: …` format, which `parseQaPairs` reads back. A custom
 * prompt replaces only the description; the format block with the text is always appended.
 */
import { textHead } from './text-cut.js';

export interface QaPair {
  q: string;
  a: string;
}

export const DEFAULT_QA_DESCRIPTION = `Study the text inside the <Context></Context> tags and organise what you learn:
- Ask questions about it and answer each one.
- Answers are detailed and complete; keep the original wording where possible and expand where useful.
- Answers may use Markdown (lists, bold, tables, code), but no images or links that are not in the text.
- Ask at most 50 questions.
- Write the questions and answers in the language of the text.`;

const FORMAT_BLOCK = `Reply with the questions and answers in exactly this format:
Q1: question
A1: answer
Q2: question
A2: answer
...`;

export function buildQaPrompt(text: string, customPrompt?: string): { role: 'user'; content: string }[] {
  const description = customPrompt?.trim() || DEFAULT_QA_DESCRIPTION;
  return [{ role: 'user', content: `${description}\n\n${FORMAT_BLOCK}\n\n<Context>\n${text}\n</Context>` }];
}

// A `Q<n>:` or `A<n>:` marker (a full-width colon too). It cannot backtrack past its own digits
// and spaces, so one scan of the answer finds every marker in linear time.
const MARKER = /([QA])(\d+)\s*[:：]/g;

/**
 * The most characters of a model answer read for pairs: far beyond any model's answer length
 * (maxResponse tokens), and a bound on the work one answer costs the training worker.
 */
export const MAX_QA_ANSWER_CHARS = 1_000_000;

interface Marker {
  kind: string;
  num: string;
  start: number;
  end: number;
}

/**
 * The Q/A pairs of a model answer, in order; empty questions or answers are skipped. A question
 * runs from `Qn:` to the first `An:` after it (same n); its answer runs to the next `Q<digits>:`
 * or the end. A `Qn:` with no `An:` after it starts no pair.
 */
export function parseQaPairs(answer: string): QaPair[] {
  // Some models return the escaped form of newlines.
  const text = textHead(answer, MAX_QA_ANSWER_CHARS).replace(/\\n/g, '\n').replace(/\r\n?/g, '\n');
  const markers: Marker[] = Array.from(text.matchAll(MARKER), (m) => ({ kind: m[1]!, num: m[2]!, start: m.index, end: m.index + m[0].length }));
  // For each marker, the index of the next `A` marker of its number and of the next `Q` marker (−1: none).
  const nextAnswer = new Array<number>(markers.length);
  const nextQuestion = new Array<number>(markers.length);
  const answerAt = new Map<string, number>();
  let questionAt = -1;
  for (let i = markers.length - 1; i >= 0; i--) {
    const marker = markers[i]!;
    nextAnswer[i] = answerAt.get(marker.num) ?? -1;
    nextQuestion[i] = questionAt;
    if (marker.kind === 'A') answerAt.set(marker.num, i);
    else questionAt = i;
  }
  const pairs: QaPair[] = [];
  let i = markers.findIndex((marker) => marker.kind === 'Q');
  while (i >= 0) {
    const a = nextAnswer[i]!;
    if (a < 0) {
      i = nextQuestion[i]!;
      continue;
    }
    const end = nextQuestion[a]!;
    const q = text.slice(markers[i]!.end, markers[a]!.start).trim();
    const answerText = text.slice(markers[a]!.end, end < 0 ? text.length : markers[end]!.start).replace(/\n\s*/g, '\n').trim();
    if (q && answerText) pairs.push({ q, a: answerText });
    i = end;
  }
  return pairs;
}
