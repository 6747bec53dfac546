import { z } from 'zod';

/**
 * A MongoDB ObjectId as 24 hex characters, lower-cased: repositories return ids as lower-case
 * text and the services compare ids as text, so an id sent in capitals must compare equal.
 */
export const zObjectId = z
  .string()
  .regex(/^[0-9a-fA-F]{24}$/, 'expected a 24-character hex id')
  .transform((id) => id.toLowerCase());

/** The reference's ParentIdType: an id, or null/empty for the root. Empty string normalises to null. */
export const zParentId = z
  .union([zObjectId, z.literal(''), z.null()])
  .transform((value) => (value === '' ? null : value));

/** A list filter's search text, kept as typed: blank is no search. */
export const zSearchText = z
  .string()
  .max(200)
  .optional()
  .transform((text) => (text?.trim() ? text : undefined));

/** A number that may arrive as a query-string text. */
export const zNumberLike = z.union([z.number(), z.string().trim().regex(/^-?\d+(\.\d+)?$/, 'expected a number').transform(Number)]);

/**
 * An integer that may arrive as a query-string text. Text is held to what a JSON number must be
 * (a safe integer): 400 digits would otherwise read as Infinity, 20 as an inexact 1e20.
 */
export const zIntLike = z.union([
  z.number().int(),
  z
    .string()
    .trim()
    .regex(/^-?\d+$/, 'expected an integer')
    .transform(Number)
    .refine(Number.isSafeInteger, 'expected an integer between -(2^53 - 1) and 2^53 - 1'),
]);

/** A boolean that may arrive as a query-string text. */
export const zBoolLike = z.union([z.boolean(), z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1')]);

/**
 * A page size, clamped to `max` (30 by default) as the reference does with
 * `Math.min(pageSize, 30)`: the web client asks for 50 and gets 30, never a 400.
 */
export const zPageSize = (max = 30, fallback = 10) =>
  zIntLike.pipe(z.number().int().min(1)).transform((size) => Math.min(size, max)).default(fallback);

export const zPageNum = zIntLike.pipe(z.number().int().min(1)).default(1);

/** How many items to skip (an offset-paged list); each list says whether it is optional. */
export const zOffset = zIntLike.pipe(z.number().int().min(0));

/** The skip and limit of a page: the client's offset when it sent one, else page `pageNum` (from 1). */
export const pageSkipLimit = (pageNum: number, pageSize: number, offset?: number) => ({ skip: offset ?? (pageNum - 1) * pageSize, limit: pageSize });

/**
 * A point in time as clients send one: ISO 8601 text (a date, or a date-time as JSON writes a
 * Date) or milliseconds since 1970. Not `z.coerce.date()`, which reads null, true, "10" or [5]
 * as dates (1970-01-01, 2001-10-01…) and so stores or filters by a time nobody sent.
 */
export const zDate = z
  .union([z.iso.datetime({ offset: true, local: true }), z.iso.date(), z.number()], { error: 'must be an ISO 8601 date or milliseconds since 1970' })
  .transform((value) => new Date(value))
  .refine((date) => !Number.isNaN(date.getTime()), 'must be a date')
  .refine(hasFourDigitYear, 'must fall between the years 0000 and 9999 (UTC)');

/**
 * Whether a time's UTC year has four digits. JSON writes any other year in the extended form
 * (`+010000-…`), which ISO 8601 text fields refuse: a stored year 10000 would be listed, then
 * refused when the reference's edit forms send the listed value back.
 */
export function hasFourDigitYear(date: Date): boolean {
  const year = date.getUTCFullYear();
  return year >= 0 && year <= 9999;
}

/** Short display names as the reference limits them. */
export const zName = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
/**
 * A web address a stored record points to (links, external files, site roots, hooks): http(s)
 * and parseable, so that one which could never be fetched (`http://exa[mple`, a port over
 * 65535) is a 400 naming the field, not a record failing later.
 */
export const zHttpUrl = z
  .string()
  .max(2000)
  .regex(/^https?:\/\/\S+$/i, 'must be an http(s) URL')
  .refine((url) => URL.canParse(url), 'must be an http(s) URL');

/**
 * The most keys a free-form object of a request (chat variables, chat and collection metadata,
 * a plugin's inputs) may hold, counted at every level of nesting. FastGPT sets no bound; ours is
 * far above what its forms build (an app's variables are a handful of fields; metadata a few
 * labels) and far below what made each request cost seconds: 20,000 variables, stored with the
 * chat and read back by every turn, made each turn of that chat take 10-15 s.
 */
export const MAX_FREE_FORM_KEYS = 1000;

/**
 * How many keys `value` holds, counting the keys of every object in it (in arrays too), up to
 * `stopAt`: iterative, and it stops counting there.
 */
export function countKeys(value: unknown, stopAt = Number.POSITIVE_INFINITY): number {
  let count = 0;
  const pending: object[] = typeof value === 'object' && value !== null ? [value] : [];
  const queue = (child: unknown) => {
    if (typeof child === 'object' && child !== null) pending.push(child);
  };
  while (pending.length > 0) {
    const current = pending.pop() as Record<string, unknown>;
    if (Array.isArray(current)) {
      for (const item of current) queue(item);
      continue;
    }
    for (const key in current) {
      if (++count >= stopAt) return count;
      queue(current[key]);
    }
  }
  return count;
}

/** Whether `value` holds more than `max` keys at all levels (countKeys), counting no further than the key past `max`. */
export const holdsMoreKeysThan = (value: unknown, max: number): boolean => countKeys(value, max + 1) > max;

/** `schema` held to at most `max` keys at all levels (holdsMoreKeysThan): more is a 400 naming the field. */
export const withKeyLimit = <T extends z.ZodType>(schema: T, max = MAX_FREE_FORM_KEYS) =>
  schema.refine((value) => !holdsMoreKeysThan(value, max), `more than ${max} keys (counted at every level of nesting)`);

/** A free-form object of any JSON values, with at most `max` keys at all levels (MAX_FREE_FORM_KEYS). */
export const zFreeFormRecord = (max = MAX_FREE_FORM_KEYS) => withKeyLimit(z.record(z.string(), z.unknown()), max);
