import { compileSelector, parseSelector, type Requirement } from '../../domain/label-selector.js';
import { Errors } from '../../infra/errors.js';
import { escapeRegex } from '../../infra/mongo.js';

/**
 * Turns the v1alpha3 list query (KubeSphere 3.4 §8.2, unknown keys ignored) into a MongoDB
 * filter, sort and page window. Only `>`/`<` selector requirements cannot be expressed on the
 * flat `labelPairs`/`labelKeys` arrays; they come back as `codeFilters` for the service.
 */
export type QueryValue = string | string[] | undefined;
export type MongoFilter = Record<string, unknown>;

export type PageWindow = { kind: 'all' } | { kind: 'none' } | { kind: 'page'; skip: number; limit: number };

export interface CodeFilter {
  target: 'labels' | 'annotations';
  requirements: Requirement[];
}

export interface NodeListPlan {
  filter: MongoFilter;
  codeFilters: CodeFilter[];
  sort: Record<string, 1 | -1>;
  window: PageWindow;
  /** A filter that can never match a node (e.g. ownerKind): skip the database. */
  matchesNothing: boolean;
}

/**
 * Requirements one selector may hold (not in the reference). Each is evaluated per node (a
 * `>`/`<` one in code); 2,300 of them cost about 0.7 s per 1,000 nodes. Real selectors hold a few.
 */
export const MAX_SELECTOR_REQUIREMENTS = 64;

/** A selector over the limit: 400 Status naming the parameter. */
const tooManyRequirements = (parameter: string, count: number) =>
  Errors.k8s(400, 'BadRequest', `${parameter}: ${count} requirements, at most ${MAX_SELECTOR_REQUIREMENTS} are allowed`);

const first = (value: QueryValue) => (Array.isArray(value) ? value[0] : value);
const last = (value: QueryValue) => (Array.isArray(value) ? value[value.length - 1] : value);

const INT64_MAX = 2n ** 63n - 1n;
const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER);

/** Go's strconv.Atoi on 64 bits: optional sign and decimal digits, within int64, else null. */
function parseGoInt(text: string | undefined): bigint | null {
  // Leading zeros are allowed in any number; past them, more than 19 digits is beyond int64.
  if (text === undefined || !/^[+-]?\d+$/.test(text)) return null;
  const digits = text.replace(/^[+-]?0*/, '');
  if (digits.length > 19) return null;
  const value = BigInt(`${text.startsWith('-') ? '-' : ''}${digits || '0'}`);
  return value > INT64_MAX || value < -INT64_MAX - 1n ? null : value;
}

const GO_TRUE = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);

/**
 * The longest `name` / `alias` substring looked for: a node name has at most 253 characters and an
 * alias is a display name, so a longer one matches nothing (as in KubeSphere); as a pattern it
 * would be a regular expression too large for the engines (a 500 from 32,768 characters).
 */
const LONGEST_SUBSTRING = 4096;

/**
 * KubeSphere's window: offset = (page-1)*limit in Go's int64 arithmetic (wrapping), then nothing
 * when limit or offset is negative or offset is past the end. A page Go reads but JavaScript
 * numbers cannot hold (`page=10000000000000000`) is therefore past the end, not page 1.
 */
export function pageWindow(pageText: string | undefined, limitText: string | undefined): PageWindow {
  const page = parseGoInt(pageText) ?? 1n;
  const limit = parseGoInt(limitText) ?? -1n;
  if (limit === -1n) return { kind: 'all' };
  if (limit <= 0n) return { kind: 'none' };
  const skip = BigInt.asIntN(64, (page - 1n) * limit);
  // No list reaches 2^53 nodes: a larger offset is past the end, a larger limit is "the rest".
  if (skip < 0n || skip > SAFE_MAX) return { kind: 'none' };
  return { kind: 'page', skip: Number(skip), limit: Number(limit > SAFE_MAX ? SAFE_MAX : limit) };
}

const FIELDS = {
  labels: { pairs: 'labelPairs', keys: 'labelKeys' },
  annotations: { pairs: 'annotationPairs', keys: 'annotationKeys' },
} as const;

/** Mongo clauses for the requirements that arrays can answer; the rest are returned. */
function selectorClauses(requirements: Requirement[], target: 'labels' | 'annotations', clauses: MongoFilter[]): Requirement[] {
  const { pairs, keys } = FIELDS[target];
  const leftover: Requirement[] = [];
  for (const requirement of requirements) {
    const values = requirement.values.map((value) => `${requirement.key}=${value}`);
    switch (requirement.operator) {
      case 'in':
        clauses.push({ [pairs]: values.length === 1 ? values[0] : { $in: values } });
        break;
      case 'notin':
        clauses.push({ [pairs]: values.length === 1 ? { $ne: values[0] } : { $nin: values } });
        break;
      case 'exists':
        clauses.push({ [keys]: requirement.key });
        break;
      case 'notexists':
        clauses.push({ [keys]: { $ne: requirement.key } });
        break;
      default:
        leftover.push(requirement);
    }
  }
  return leftover;
}

export function planNodeList(query: Record<string, QueryValue>): NodeListPlan {
  const clauses: MongoFilter[] = [];
  const codeFilters: CodeFilter[] = [];
  let matchesNothing = false;
  const addSelector = (parameter: string, text: string, target: 'labels' | 'annotations', invalidMatchesAll: boolean) => {
    const parsed = parseSelector(text);
    if (!parsed.ok) {
      // labelSelector: an unparseable selector is ignored; label/annotation filters then match nothing.
      if (!invalidMatchesAll) matchesNothing = true;
      return;
    }
    if (parsed.requirements.length > MAX_SELECTOR_REQUIREMENTS) throw tooManyRequirements(parameter, parsed.requirements.length);
    const leftover = selectorClauses(parsed.requirements, target, clauses);
    if (leftover.length > 0) codeFilters.push({ target, requirements: leftover });
  };

  const selector = first(query.labelSelector);
  if (selector) addSelector('labelSelector', selector, 'labels', true);

  for (const [key, raw] of Object.entries(query)) {
    const value = last(raw);
    if (value === undefined) continue;
    switch (key) {
      case 'name':
        if (value.length > LONGEST_SUBSTRING) matchesNothing = true;
        else if (value !== '') clauses.push({ _id: { $regex: escapeRegex(value) } });
        break;
      case 'names':
        clauses.push({ _id: { $in: value.split(',') } });
        break;
      case 'uid':
        clauses.push({ uid: value });
        break;
      case 'status':
        clauses.push({ status: value });
        break;
      case 'label':
        addSelector('label', value, 'labels', false);
        break;
      case 'annotation':
        addSelector('annotation', value, 'annotations', false);
        break;
      case 'alias':
        if (value.length > LONGEST_SUBSTRING) matchesNothing = true;
        else if (value !== '') clauses.push({ alias: { $regex: escapeRegex(value) } });
        break;
      case 'namespace':
        // Nodes have no namespace: only the empty value matches.
        if (value !== '') matchesNothing = true;
        break;
      case 'ownerReference':
      case 'ownerKind':
        matchesNothing = true;
        break;
      default:
        // page, limit, sortBy, ascending, labelSelector, and unknown keys (ignored, as in 4.x).
        break;
    }
  }

  const direction = GO_TRUE.has(first(query.ascending) ?? '') ? 1 : -1;
  const sort: Record<string, 1 | -1> = first(query.sortBy) === 'name' ? { _id: direction } : { creationTimestamp: direction, _id: direction };
  return {
    filter: clauses.length === 0 ? {} : clauses.length === 1 ? (clauses[0] as MongoFilter) : { $and: clauses },
    codeFilters,
    sort,
    window: pageWindow(first(query.page), first(query.limit)),
    matchesNothing,
  };
}

/**
 * The requirements Mongo could not answer, as a test of a node's stored pairs, for one plan over
 * many nodes: a node's pairs are read only for the keys the requirements name, instead of
 * building an object of every pair (`splitPair`) per node per filter (~8 µs a node with a dozen
 * dotted label keys).
 */
export function compileCodeFilters(codeFilters: readonly CodeFilter[]): (node: { labelPairs: string[]; annotationPairs?: string[] }) => boolean {
  // Each selector compiled once (its `>`/`<` bounds parsed once), not per node.
  const compiled = codeFilters.map(({ target, requirements }) => ({
    target,
    matches: compileSelector(requirements),
    keys: [...new Set(requirements.map((requirement) => requirement.key))],
  }));
  return (node) =>
    compiled.every(({ target, matches, keys }) => {
      // Null prototype: an own property per pair, as Object.fromEntries makes (later pairs win).
      const map: Record<string, string> = Object.create(null);
      for (const pair of target === 'labels' ? node.labelPairs : (node.annotationPairs ?? [])) {
        // splitPair's cut for keys without '=' (selector keys never have one), without slicing every pair.
        for (const key of keys) {
          if (!pair.startsWith(key)) continue;
          if (pair.charCodeAt(key.length) === 61) map[key] = pair.slice(key.length + 1);
          else if (pair.length === key.length + 1) map[key] = pair; // no '=' at all: splitPair drops the last character
        }
      }
      return matches(map);
    });
}
