/**
 * A graph part stored as JSON text (apps and their versions): absent, empty or damaged text reads
 * as `fallback`, so such a document still decodes (with an empty graph part) instead of throwing.
 */
export function parseStoredJson<T>(text: string | undefined, fallback: T): T {
  if (!text) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}
