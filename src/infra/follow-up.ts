/**
 * Runs `work`, then `followUp`: after work that succeeded (when `needed` says so for its
 * result), and after work that failed too, since work that failed midway or lost its answer may
 * have done part of what it does. The work's own error is the one thrown; a follow-up failing
 * after it is ignored. (Stamp bumps, derived state recomputed, second passes of a cascade.)
 */
export async function withFollowUp<T>(work: () => Promise<T>, followUp: () => Promise<unknown>, needed: (result: T) => boolean = () => true): Promise<T> {
  let result: T;
  try {
    result = await work();
  } catch (error) {
    await followUp().catch(() => undefined);
    throw error;
  }
  if (needed(result)) await followUp();
  return result;
}
