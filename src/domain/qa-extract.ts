/**
 * QA training (docs/datasets.md): a language model reads a chunk and writes question/answer
 * pairs in the numbered `Q1: … A1: …` format, which `parseQaPairs` reads back. A custom
 * prompt replaces only the description; the format block with the text is always appended.
 */
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

// Qn: question … An: answer, the answer running to the next Q<digit> marker or the end.
const PAIR = /Q(\d+)\s*[:：]\s*([\s\S]*?)\s*A\1\s*[:：]\s*([\s\S]*?)(?=\s*Q\d+\s*[:：]|$)/g;

/** The Q/A pairs of a model answer, in order; empty questions or answers are skipped. */
export function parseQaPairs(answer: string): QaPair[] {
  // Some models return the escaped form of newlines.
  const text = answer.replace(/\\n/g, '\n').replace(/\r\n?/g, '\n');
  const pairs: QaPair[] = [];
  for (const match of text.matchAll(PAIR)) {
    const q = match[2]!.trim();
    const a = match[3]!.replace(/\n\s*/g, '\n').trim();
    if (q && a) pairs.push({ q, a });
  }
  return pairs;
}
