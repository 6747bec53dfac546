/**
 * Points as the reference bills a model call: the model's `charsPointsPrice` per 1000 tokens
 * (language, embedding and rerank models) or characters (speech), or per 60 seconds of audio
 * (whisper). A model without a price costs nothing.
 */
export function usagePoints(model: { charsPointsPrice?: number } | undefined, amount: number, per: 1000 | 60 = 1000): number {
  return ((model?.charsPointsPrice ?? 0) * amount) / per;
}

/**
 * The prompt and answer tokens of a run's usage lines (OpenAI's `prompt_tokens` and
 * `completion_tokens`). A line without the split (an embedding, a rerank) is all input.
 */
export function tokenTotals(lines: readonly { tokens?: number; inputTokens?: number; outputTokens?: number }[]): { inputTokens: number; outputTokens: number } {
  let inputTokens = 0;
  let outputTokens = 0;
  for (const line of lines) {
    if (line.inputTokens === undefined && line.outputTokens === undefined) {
      inputTokens += line.tokens ?? 0;
      continue;
    }
    inputTokens += line.inputTokens ?? 0;
    outputTokens += line.outputTokens ?? 0;
  }
  return { inputTokens, outputTokens };
}
