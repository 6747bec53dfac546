/**
 * What the nodes that ran before a failure used: carried by the error that ends a run, so the
 * turn is billed for model calls that answered before a later node failed (a caller could
 * otherwise make any turn free by steering a later node into failing). Each run level adds the
 * usages of its own nodes that completed; a nested run's (a child app, a plugin, a tool call)
 * come with the error it throws.
 */
import type { NodeUsage } from './types.js';

const USAGES = Symbol('usages of the nodes that ran before the failure');

type Carrier = { [USAGES]?: readonly (readonly NodeUsage[])[] };

/** The usages `error` carries (none when it carries none, or is no object). */
export function usagesBeforeFailure(error: unknown): NodeUsage[] {
  if (typeof error !== 'object' || error === null) return [];
  return ((error as Carrier)[USAGES] ?? []).flat();
}

/**
 * `error`, carrying `usages` too. The list is kept as given, not copied: a branch that ran beside
 * the failing one and ends after it adds its usage to the run's list, and so to what is billed.
 */
export function withUsagesBefore<T>(error: T, usages: readonly NodeUsage[]): T {
  if (typeof error !== 'object' || error === null) return error;
  const carried = (error as Carrier)[USAGES] ?? [];
  // The same list twice (a level that rethrows what it already marked) counts once.
  if (carried.includes(usages)) return error;
  Object.defineProperty(error, USAGES, { value: [usages, ...carried], configurable: true, enumerable: false, writable: true });
  return error;
}
