import type { z } from 'zod';

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);

/** `data` without the top-level fields these issues are about, when every issue is a field sent as null. */
function leftOutNulls(data: Record<string, unknown>, issues: readonly z.core.$ZodIssue[]): Record<string, unknown> | undefined {
  const refused = new Set<string>();
  for (const issue of issues) {
    const [key] = issue.path;
    if (issue.path.length !== 1 || typeof key !== 'string' || data[key] !== null) return undefined;
    refused.add(key);
  }
  return Object.fromEntries(Object.entries(data).filter(([key]) => !refused.has(key)));
}

/**
 * An object refused only because some of its fields were sent as `null`, with those fields left
 * out; undefined when anything else is wrong with it, or nothing was null. API scripts (and the
 * reference's handlers, which test such fields for truth) treat `null` as "not given": an
 * optional field sent as null reads as absent, while a field whose schema gives null a meaning
 * (a parent of null is the root) keeps it, since the schema accepts it there.
 */
export function withoutRefusedNulls(schema: z.ZodType, data: unknown): Record<string, unknown> | undefined {
  if (!isPlainObject(data)) return undefined;
  const result = schema.safeParse(data);
  return result.success ? undefined : leftOutNulls(data, result.error.issues);
}

/**
 * `schema.safeParse` where an optional field sent as null reads as absent (withoutRefusedNulls):
 * the one rule of every route's input and of the multipart fields parsed by hand. A refusal is
 * the first parse's, naming what the client sent.
 */
export function safeParseNullAsAbsent<S extends z.ZodType>(schema: S, data: unknown): z.ZodSafeParseResult<z.output<S>> {
  const first = schema.safeParse(data);
  if (first.success || !isPlainObject(data)) return first;
  const stripped = leftOutNulls(data, first.error.issues);
  if (!stripped) return first;
  const second = schema.safeParse(stripped);
  return second.success ? second : first;
}
