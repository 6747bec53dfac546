import { afterEach, describe, expect, it, vi } from 'vitest';
import { compileCodeFilters } from '../../src/cluster/nodes/node-query.js';
import { matchesSelector, parseSelector } from '../../src/domain/label-selector.js';

/** `>`/`<` bounds: 64-bit integers as the reference reads them, parsed once per selector, not per node. */
describe('label selector bounds', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it.each([
    ['the largest 64-bit integer', true, 'a>9223372036854775807'],
    // Within 64 bits, but a negative bound is not a label value: invalid in the reference too.
    ['the smallest 64-bit integer', false, 'a<-9223372036854775808'],
    ['leading zeros', true, `a>${'0'.repeat(30)}17`],
    ['leading zeros past a label value\'s 63 characters', false, `a>${'0'.repeat(62)}17`],
    ['one over the largest', false, 'a>9223372036854775808'],
    ['one under the smallest', false, 'a<-9223372036854775809'],
    ['15,000 digits', false, `a>${'9'.repeat(15_000)}`],
    ['a fraction', false, 'a>1.5'],
  ])('%s: valid %s', (_name, valid, text) => {
    expect(parseSelector(text).ok).toBe(valid);
  });

  it('a label value beyond 64 bits matches no bound (the reference cannot read it)', () => {
    const requirements = parseSelector('a>0');
    if (!requirements.ok) throw new Error(requirements.error);
    expect(matchesSelector(requirements.requirements, { a: '9223372036854775807' })).toBe(true);
    expect(matchesSelector(requirements.requirements, { a: '9223372036854775808' })).toBe(false);
    expect(matchesSelector(requirements.requirements, { a: `${'0'.repeat(40)}5` })).toBe(true);
  });

  it('a compiled filter parses each bound once, whatever the number of nodes', () => {
    const parsed = parseSelector('tier>3,tier<100');
    if (!parsed.ok) throw new Error(parsed.error);
    const nodes = Array.from({ length: 1000 }, (_, index) => ({ labelPairs: [`tier=${index}`] }));
    const bigInt = vi.spyOn(globalThis, 'BigInt');
    const matches = compileCodeFilters([{ target: 'labels', requirements: parsed.requirements }]);
    const selected = nodes.filter(matches);
    expect(selected).toHaveLength(96);
    // Two bounds once, plus at most one reading of each node's value per requirement.
    expect(bigInt.mock.calls.length).toBeLessThanOrEqual(2 + 2 * nodes.length);
    const boundReads = bigInt.mock.calls.filter(([text]) => text === '3' || text === '100').length;
    // The nodes whose own value is "3" or "100" read those texts too: 2 nodes × up to 2 requirements.
    expect(boundReads).toBeLessThanOrEqual(2 + 4);
  });
});
