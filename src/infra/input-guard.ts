import { Errors } from './errors.js';

/**
 * How deep request values may nest. No field of either API needs more than a handful of
 * levels; MongoDB refuses documents nested beyond 100, and a value stored with its nested
 * arrays wrapped (infra/storage-codec.ts) is up to twice as deep, inside a document of its own
 * (a chat's variables, an item's values); code that walks values recursively (JSON.stringify,
 * zod, the BSON encoder) overflows the stack long before a body limit is reached.
 */
export const MAX_INPUT_DEPTH = 32;

/**
 * Keys that would replace how JavaScript turns an object into text or a number: `String()`,
 * `Number()` and template literals throw on an object whose `toString`/`valueOf` is not a
 * function, and request values reach them everywhere (variables, node inputs, metadata).
 */
const CONVERSION_KEYS = new Set(['toString', 'valueOf']);

/**
 * Every key name the guard may refuse (`constructor` only when it holds `prototype`): an API that
 * ignores unknown keys drops these before the guard runs (the cluster API's forms and queries).
 */
export const GUARDED_KEY_NAMES: ReadonlySet<string> = new Set(['__proto__', 'constructor', ...CONVERSION_KEYS]);

export type InputProblem = { kind: 'nul' | 'surrogate' | 'nonFinite' | 'depth' | 'proto' | 'conversion'; path: string };

/**
 * The first thing wrong with a request value: a U+0000 in a string or key (PostgreSQL-backed
 * servers such as FerretDB cannot store it, and no field has a use for it), a key, or the value
 * itself when it is a string, that is not well-formed UTF-16 (an unpaired surrogate, JSON's
 * "\ud800"), a number that is not finite (JSON's 1e400 parses to Infinity, which a stored
 * document would not give back as sent), nesting deeper
 * than MAX_INPUT_DEPTH, a `toString`/`valueOf` key (CONVERSION_KEYS), or a `__proto__` key or a
 * `constructor` holding `prototype` (JSON bodies are refused them by the parser; query strings
 * parse `__proto__` into an own key, which Object.assign would turn into a prototype). `path` is
 * the dotted path, `''` for the value itself. Iterative, so a deeply nested value cannot
 * overflow the stack here.
 *
 * A string inside the value that is not well-formed is mended in place, its unpaired surrogates
 * made U+FFFD: what MongoDB stores for them anyway (BSON is UTF-8), now the same on every server
 * and in the answer. Clients that cut a text by length can split an emoji's pair; refusing the
 * whole request for it broke their turns. A key is refused instead: mended, it would name
 * another field.
 */
export function findInputProblem(value: unknown): InputProblem | null {
  if (typeof value === 'string') return textProblem(value, '');
  if (typeof value === 'number') return Number.isFinite(value) ? null : { kind: 'nonFinite', path: '' };
  // Only objects are queued; a string value is checked where it is found, and a field's dotted
  // path is spelled out only for a problem (every request passes here, nearly always clean).
  const pending: PendingValue[] = [{ value, parent: null, key: '', depth: 0 }];
  while (pending.length > 0) {
    const entry = pending.pop() as PendingValue;
    const current = entry.value;
    if (typeof current !== 'object' || current === null || Buffer.isBuffer(current)) continue;
    if (entry.depth >= MAX_INPUT_DEPTH) return { kind: 'depth', path: pathOf(entry) };
    // Arrays by index: Object.keys() of a 20 M-element array built 20 M strings (seconds).
    if (Array.isArray(current)) {
      for (let index = 0; index < current.length; index++) {
        const problem = checkChild(entry, current[index], index, pending);
        if (problem) return problem;
      }
      continue;
    }
    for (const key of Object.keys(current)) {
      const keyProblem = textKind(key);
      if (keyProblem) return { kind: keyProblem, path: pathOf(entry) };
      const child = (current as Record<string, unknown>)[key];
      if (key === '__proto__' || (key === 'constructor' && holdsPrototype(child))) return { kind: 'proto', path: pathOf(entry, key) };
      if (CONVERSION_KEYS.has(key)) return { kind: 'conversion', path: pathOf(entry, key) };
      const problem = checkChild(entry, child, key, pending);
      if (problem) return problem;
    }
  }
  return null;
}

/** `constructor: { prototype: … }`: what a recursive merge would follow into a prototype. */
function holdsPrototype(value: unknown): boolean {
  return typeof value === 'object' && value !== null && Object.hasOwn(value, 'prototype');
}

/**
 * What is wrong with a string or key, if anything. Both tests are native scans (isWellFormed
 * answers at once for a string V8 holds in one byte per character, as most request text is).
 */
function textKind(text: string): 'nul' | 'surrogate' | null {
  if (text.includes('\0')) return 'nul';
  return (text as CheckableText).isWellFormed() ? null : 'surrogate';
}

/** String.prototype.isWellFormed and toWellFormed: in Node 20, but not typed by the ES2023 library this project compiles against. */
type CheckableText = string & { isWellFormed(): boolean };
type MendableText = string & { toWellFormed(): string };

function textProblem(text: string, path: string): InputProblem | null {
  const kind = textKind(text);
  return kind ? { kind, path } : null;
}

/** A string or number child checked now (a string not well-formed mended in place), an object one queued. */
function checkChild(entry: PendingValue, child: unknown, key: string | number, pending: PendingValue[]): InputProblem | null {
  if (typeof child === 'string') {
    const kind = textKind(child);
    if (kind === 'surrogate') (entry.value as Record<string | number, unknown>)[key] = (child as MendableText).toWellFormed();
    else if (kind) return { kind, path: pathOf(entry, key) };
  } else if (typeof child === 'number') {
    if (!Number.isFinite(child)) return { kind: 'nonFinite', path: pathOf(entry, key) };
  } else if (typeof child === 'object' && child !== null) {
    pending.push({ value: child, parent: entry, key, depth: entry.depth + 1 });
  }
  return null;
}

interface PendingValue {
  value: unknown;
  /** The value holding this one under `key` (null for the request value itself). */
  parent: PendingValue | null;
  key: string | number;
  depth: number;
}

/** The dotted path of `entry` (and of its field `key`, when given): '' for the request value itself. */
function pathOf(entry: PendingValue, key?: string | number): string {
  const keys = key === undefined ? [] : [key];
  for (let at: PendingValue | null = entry; at?.parent; at = at.parent) keys.push(at.key);
  return keys.reverse().join('.');
}

/** Whether a value nests deeper than `max` levels (iterative: any depth is measured without overflowing the stack). */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const pending: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (pending.length > 0) {
    const { value: current, depth } = pending.pop() as { value: unknown; depth: number };
    if (typeof current !== 'object' || current === null) continue;
    if (depth >= max) return true;
    for (const child of Object.values(current)) pending.push({ value: child, depth: depth + 1 });
  }
  return false;
}

/** Refuses a value findInputProblem finds fault with: 400 naming the field (`where` names the value itself). */
export function assertSafeInput(value: unknown, where = 'request'): void {
  const problem = findInputProblem(value);
  if (!problem) return;
  const field = problem.path || where;
  if (problem.kind === 'nul') throw Errors.missingParams(`Invalid field '${field}': must not contain the NUL character (U+0000)`);
  if (problem.kind === 'surrogate') throw Errors.missingParams(`Invalid field '${field}': must be well-formed Unicode text (an unpaired UTF-16 surrogate, such as \\ud800, cannot be stored)`);
  if (problem.kind === 'nonFinite') throw Errors.missingParams(`Invalid field '${field}': must be a finite number`);
  if (problem.kind === 'proto') throw Errors.missingParams(`Invalid field '${field}': the key __proto__, and a constructor holding a prototype, are not accepted`);
  if (problem.kind === 'conversion') throw Errors.missingParams(`Invalid field '${field}': the keys toString and valueOf are not accepted`);
  throw Errors.missingParams(`Invalid field '${field}': nested deeper than ${MAX_INPUT_DEPTH} levels`);
}
