import type { z } from 'zod';

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);

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
  if (result.success) return undefined;
  const refused = new Set<string>();
  for (const issue of result.error.issues) {
    const [key] = issue.path;
    if (issue.path.length !== 1 || typeof key !== 'string' || data[key] !== null) return undefined;
    refused.add(key);
  }
  return Object.fromEntries(Object.entries(data).filter(([key]) => !refused.has(key)));
}
