/**
 * Points as the reference bills a model call: the model's `charsPointsPrice` per 1000 tokens
 * (language, embedding and rerank models) or characters (speech), or per 60 seconds of audio
 * (whisper). A model without a price costs nothing.
 */
export function usagePoints(model: { charsPointsPrice?: number } | undefined, amount: number, per: 1000 | 60 = 1000): number {
  return ((model?.charsPointsPrice ?? 0) * amount) / per;
}
