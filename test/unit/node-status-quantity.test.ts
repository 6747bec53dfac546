// Pure helpers behind the node list: quantities, pod usage annotations and the page window.
import { describe, expect, it } from 'vitest';
import { pageWindow, planNodeList } from '../../src/cluster/nodes/node-query.js';
import { type PodResourcesInput, podResourceUsage, type ResourceUsage, usageAnnotations, ZERO_USAGE } from '../../src/cluster/nodes/pod-usage.js';
import { formatBytes, formatFraction, formatMilli, milliValue, unitValue } from '../../src/cluster/nodes/quantity.js';

describe('quantities', () => {
  it.each([
    ['100m', 100],
    ['0.1', 100],
    ['1', 1000],
    ['2.5', 2500],
    ['1k', 1_000_000],
    ['1e3', 1_000_000],
    ['1u', 1],
    ['500n', 1],
    ['.5', 500],
  ])('milliValue(%s) = %i', (text, expected) => {
    expect(milliValue(text)).toBe(expected);
  });

  it.each([
    ['128974848', 128974848],
    ['129e6', 129000000],
    ['129M', 129000000],
    ['123Mi', 128974848],
    ['1Gi', 1073741824],
    ['1.5Gi', 1610612736],
    ['1Ki', 1024],
    ['100m', 1],
  ])('unitValue(%s) = %i', (text, expected) => {
    expect(unitValue(text)).toBe(expected);
  });

  it.each(['', 'abc', '1.2.3', '1Zi', '--1', '1 Gi'])('refuses %j', (text) => {
    expect(() => milliValue(text)).toThrow(/invalid quantity/);
  });

  it.each([
    [0, '0'],
    [1350, '1350m'],
    [2000, '2'],
    [2_000_000, '2k'],
    [1, '1m'],
  ])('formatMilli(%i) = %s', (millis, expected) => {
    expect(formatMilli(millis)).toBe(expected);
  });

  it.each([
    [0, '0'],
    [251658240, '240Mi'],
    [1073741824, '1Gi'],
    [1536, '1536'],
    [1_500_000_000, '1500M'],
    [1000, '1k'],
    [1234, '1234'],
  ])('formatBytes(%i) = %s', (bytes, expected) => {
    expect(formatBytes(bytes)).toBe(expected);
  });

  it.each([
    [350, 2000, '17%'],
    [1999, 2000, '99%'],
    [5, 0, '0%'],
    [4000, 2000, '200%'],
  ])('formatFraction(%i, %i) = %s', (used, allocatable, expected) => {
    expect(formatFraction(used, allocatable)).toBe(expected);
  });
});

describe('podResourceUsage (kubectl rules)', () => {
  it.each<[string, PodResourcesInput, ResourceUsage]>([
    ['no spec', {}, ZERO_USAGE],
    [
      'sum of containers',
      { spec: { containers: [{ resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m' } } }, { resources: { requests: { cpu: '50m' } } }] } },
      { cpuRequests: 150, cpuLimits: 200, memoryRequests: 67108864, memoryLimits: 0 },
    ],
    [
      'a larger init container wins per resource',
      { spec: { containers: [{ resources: { requests: { cpu: '100m', memory: '1Gi' } } }], initContainers: [{ resources: { requests: { cpu: '1', memory: '1Mi' } } }] } },
      { cpuRequests: 1000, cpuLimits: 0, memoryRequests: 1073741824, memoryLimits: 0 },
    ],
    [
      'overhead is added to requests, and to non-zero limits only',
      { spec: { containers: [{ resources: { requests: { cpu: '100m' }, limits: { cpu: '1' } } }], overhead: { cpu: '10m', memory: '1Mi' } } },
      { cpuRequests: 110, cpuLimits: 1010, memoryRequests: 1048576, memoryLimits: 0 },
    ],
  ])('%s', (_name, pod, expected) => {
    expect(podResourceUsage(pod)).toEqual(expected);
  });

  it('builds the eight annotations against allocatable', () => {
    expect(usageAnnotations({ cpuRequests: 1350, cpuLimits: 2000, memoryRequests: 251658240, memoryLimits: 0 }, { cpu: '4', memory: '8Gi' })).toEqual({
      'node.kubesphere.io/cpu-requests': '1350m',
      'node.kubesphere.io/cpu-limits': '2',
      'node.kubesphere.io/cpu-requests-fraction': '33%',
      'node.kubesphere.io/cpu-limits-fraction': '50%',
      'node.kubesphere.io/memory-requests': '240Mi',
      'node.kubesphere.io/memory-limits': '0',
      'node.kubesphere.io/memory-requests-fraction': '2%',
      'node.kubesphere.io/memory-limits-fraction': '0%',
    });
  });
});

describe('pageWindow (paging a sorted list as KubeSphere does)', () => {
  it.each([
    [undefined, undefined, { kind: 'all' }],
    ['3', undefined, { kind: 'all' }],
    [undefined, '10', { kind: 'page', skip: 0, limit: 10 }],
    ['2', '10', { kind: 'page', skip: 10, limit: 10 }],
    ['x', '10', { kind: 'page', skip: 0, limit: 10 }],
    ['1', 'x', { kind: 'all' }],
    ['1', '-1', { kind: 'all' }],
    ['1', '-2', { kind: 'none' }],
    ['1', '0', { kind: 'none' }],
    ['0', '10', { kind: 'none' }],
    ['-4', '10', { kind: 'none' }],
    ['1.5', '10', { kind: 'page', skip: 0, limit: 10 }],
    ['+2', '10', { kind: 'page', skip: 10, limit: 10 }],
    // Go reads page as int64: past the end, not page 1 (the offset is 10^17 - 10).
    ['10000000000000000', '10', { kind: 'none' }],
    ['9223372036854775807', '1', { kind: 'none' }],
    // Beyond int64 strconv.Atoi fails: the default page 1 (or no limit).
    ['9223372036854775808', '10', { kind: 'page', skip: 0, limit: 10 }],
    [`${'0'.repeat(40)}2`, '10', { kind: 'page', skip: 10, limit: 10 }],
    ['1', '9223372036854775808', { kind: 'all' }],
    // Go's (page-1)*limit wraps: (2^62)*4 is 0, the first page.
    ['4611686018427387905', '4', { kind: 'page', skip: 0, limit: 4 }],
    ['2', '9223372036854775807', { kind: 'none' }],
    ['1', '100000000000000000', { kind: 'page', skip: 0, limit: Number.MAX_SAFE_INTEGER }],
  ])('page=%s limit=%s', (page, limit, expected) => {
    expect(pageWindow(page, limit)).toEqual(expected);
  });
});

describe('planNodeList', () => {
  it('puts selector requirements on the flat arrays and leaves only > and < to code', () => {
    const plan = planNodeList({ labelSelector: 'env=prod,!edge,tier>2', status: 'running' });
    expect(plan.filter).toEqual({ $and: [{ labelPairs: 'env=prod' }, { labelKeys: { $ne: 'edge' } }, { status: 'running' }] });
    expect(plan.codeFilters).toEqual([{ target: 'labels', requirements: [{ key: 'tier', operator: 'gt', values: ['2'] }] }]);
  });

  it('sorts newest first by default, by name on request', () => {
    expect(planNodeList({}).sort).toEqual({ creationTimestamp: -1, _id: -1 });
    expect(planNodeList({ sortBy: 'name', ascending: 'true' }).sort).toEqual({ _id: 1 });
  });

  it('escapes the name substring for the regex', () => {
    expect(planNodeList({ name: 'a.b' }).filter).toEqual({ _id: { $regex: 'a\\.b' } });
  });
});

describe('quantities with huge exponents', () => {
  // Answered without building 10^exponent (millions of digits): rounded up to 1 unit, or refused
  // as out of range (node-quantity-range.test.ts).
  it.each([
    ['1e-99999999', 1, 1],
    ['-1e-99999999', -1, -1],
    ['0e-99999999', 0, 0],
    ['0.000e99999999', 0, 0],
    ['1e-5', 1, 1],
    ['123e-3', 123, 1],
  ])('%s: milli %d, unit %d', (text, milli, unit) => {
    expect(milliValue(text)).toBe(milli);
    expect(unitValue(text)).toBe(unit);
  });

  it.each(['1e99999999', '-2.5e99999999', '.5e99999999', '1e305'])('%s is out of range', (text) => {
    expect(() => milliValue(text)).toThrow(/out of range/);
    expect(() => unitValue(text)).toThrow(/out of range/);
  });
});
