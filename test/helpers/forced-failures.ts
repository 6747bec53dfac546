/** Database outages forced on one call of a repository or service method (crash and take-back tests). */

/** What the driver throws when the connection goes. */
export const outage = () => Object.assign(new Error('connection reset'), { name: 'MongoNetworkError' });

/** The next call of `object[name]` fails as a database outage would, before doing anything; later calls run as before. */
export function failsOnce<T extends object>(object: T, name: keyof T): void {
  const original = object[name];
  (object as Record<keyof T, unknown>)[name] = async () => {
    (object as Record<keyof T, unknown>)[name] = original;
    throw outage();
  };
}

/**
 * The next call of `object[name]` runs `before`, does its work, runs `after`, then fails as a
 * database outage would (the method is restored first, so that `before` and `after` use it too).
 */
export function landsThenFails<T extends object>(object: T, name: keyof T, { before, after }: { before?: () => Promise<unknown>; after?: () => Promise<unknown> } = {}): void {
  const original = object[name] as (...args: unknown[]) => Promise<unknown>;
  (object as Record<keyof T, unknown>)[name] = async (...args: unknown[]) => {
    (object as Record<keyof T, unknown>)[name] = original;
    await before?.();
    await original.apply(object, args);
    await after?.();
    throw outage();
  };
}
