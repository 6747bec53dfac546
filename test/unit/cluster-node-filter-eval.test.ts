import { describe, expect, it } from 'vitest';
import { compileFilter } from '../../src/cluster/nodes/filter-eval.js';
import { splitPair } from '../../src/cluster/nodes/node-document.js';
import { type CodeFilter, compileCodeFilters, type MongoFilter, planNodeList } from '../../src/cluster/nodes/node-query.js';
import { matchesSelector } from '../../src/domain/label-selector.js';

// The per-node evaluation the compiled filters replaced, kept here as their definition.
type Doc = Record<string, unknown>;
const elementsOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);
const equalsAny = (value: unknown, wanted: unknown) => elementsOf(value).some((element) => element === wanted);

function matchesCondition(value: unknown, condition: unknown): boolean {
  if (typeof condition !== 'object' || condition === null || Array.isArray(condition)) return equalsAny(value, condition);
  return Object.entries(condition as Doc).every(([operator, operand]) => {
    switch (operator) {
      case '$in':
        return (operand as unknown[]).some((wanted) => equalsAny(value, wanted));
      case '$nin':
        return !(operand as unknown[]).some((wanted) => equalsAny(value, wanted));
      case '$ne':
        return !equalsAny(value, operand);
      case '$regex': {
        const pattern = new RegExp(operand as string);
        return elementsOf(value).some((element) => typeof element === 'string' && pattern.test(element));
      }
      default:
        throw new Error(`operator ${operator} is not supported in process`);
    }
  });
}

function matchesFilter(filter: MongoFilter, doc: Doc): boolean {
  return Object.entries(filter).every(([field, condition]) =>
    field === '$and' ? (condition as MongoFilter[]).every((clause) => matchesFilter(clause, doc)) : matchesCondition(doc[field], condition),
  );
}

function matchesCodeFilters(codeFilters: readonly CodeFilter[], node: { labelPairs: string[]; annotationPairs?: string[] }): boolean {
  return codeFilters.every(({ target, requirements }) => {
    const map = Object.fromEntries((target === 'labels' ? node.labelPairs : (node.annotationPairs ?? [])).map(splitPair));
    return matchesSelector(requirements, map);
  });
}

let seed = 5;
const pick = (n: number) => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed % n;
};

const keys = ['zone', 'pool', 'gpu', 'tier', '__proto__', 'a.io/b'];
const values = ['1', '2', '10', '-3', 'x', 'y', ''];
const nodes = Array.from({ length: 300 }, (_, i) => {
  const labelPairs = Array.from({ length: pick(5) }, () => `${keys[pick(keys.length)]}=${values[pick(values.length)]}`);
  if (i % 50 === 0) labelPairs.push('no-equals-sign', 'k=v=w', i % 100 ? 'zoneX' : 'gpu7');
  const annotationPairs = Array.from({ length: pick(3) }, () => `${keys[pick(keys.length)]}=${values[pick(values.length)]}`);
  return { _id: `node-${i}`, uid: `u${i % 7}`, status: ['running', 'warning'][i % 2], alias: `alias ${i}`, labelPairs, labelKeys: labelPairs.map((p) => p.split('=')[0]), annotationPairs, ...(i % 3 ? {} : { annotationPairs: undefined }) };
});

function randomQuery(): Record<string, string> {
  const query: Record<string, string> = {};
  const requirement = () => {
    const key = keys.filter((k) => k !== '__proto__')[pick(keys.length - 1)];
    const list = () => Array.from({ length: 1 + pick(3) }, () => values[pick(values.length)]).join(',');
    return [`${key}`, `!${key}`, `${key}=${values[pick(values.length)]}`, `${key}!=${values[pick(values.length)]}`, `${key} in (${list()})`, `${key} notin (${list()})`, `${key}>${pick(12) - 4}`, `${key}<${pick(12) - 4}`][pick(8)];
  };
  const selector = () => Array.from({ length: 1 + pick(2) }, requirement).join(',');
  if (pick(2)) query.labelSelector = selector();
  if (pick(5) === 0) query.label = selector();
  if (pick(5) === 0) query.annotation = selector();
  if (pick(5) === 0) query.names = Array.from({ length: 1 + pick(200) }, () => `node-${pick(320)}`).join(',');
  if (pick(6) === 0) query.name = `node-${pick(30)}`;
  if (pick(6) === 0) query.alias = `alias ${pick(9)}`;
  if (pick(6) === 0) query.status = ['running', 'warning', 'unschedulable'][pick(3)]!;
  if (pick(8) === 0) query.uid = `u${pick(8)}`;
  return query;
}

describe('node filters compiled once per query', () => {
  it('select the same nodes as the per-node evaluation (400 generated queries × 300 nodes)', () => {
    let selectedSomewhere = 0;
    for (let q = 0; q < 400; q++) {
      const plan = planNodeList(randomQuery());
      const matches = compileFilter(plan.filter);
      const matchesCode = compileCodeFilters(plan.codeFilters);
      const compiled = nodes.filter((node) => matches(node) && matchesCode(node)).map((node) => node._id);
      const simple = nodes.filter((node) => matchesFilter(plan.filter, node) && matchesCodeFilters(plan.codeFilters, node)).map((node) => node._id);
      expect(compiled).toEqual(simple);
      if (compiled.length > 0 && compiled.length < nodes.length) selectedSomewhere += 1;
    }
    expect(selectedSomewhere).toBeGreaterThan(100);
  });

  it.each([
    ['$in with NaN never matches NaN', { v: { $in: [Number.NaN, 1] } }, [{ v: Number.NaN }, { v: 1 }, { v: [2, 1] }]],
    ['$nin over arrays and missing fields', { v: { $nin: ['a', 'b'] } }, [{ v: ['c', 'a'] }, { v: 'c' }, {}, { v: [] }]],
    ['$in against missing fields and nulls', { v: { $in: [null, undefined] } }, [{}, { v: null }, { v: 0 }]],
    ['equality and $ne inside $and', { $and: [{ v: 1 }, { w: { $ne: 2 } }] }, [{ v: 1, w: 2 }, { v: [1], w: 3 }, { v: 2 }]],
  ])('%s', (_name, filter, docs) => {
    const matches = compileFilter(filter);
    expect(docs.map((doc) => matches(doc))).toEqual(docs.map((doc) => matchesFilter(filter, doc)));
  });

  it('an unsupported operator still throws when it is evaluated, not before', () => {
    const matches = compileFilter({ v: { $gt: 1 } });
    expect(() => matches({ v: 2 })).toThrow('operator $gt is not supported in process');
  });
});
