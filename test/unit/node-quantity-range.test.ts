// Quantities beyond int64 milli-units: refused at import, and never a failing page once stored.
import { describe, expect, it } from 'vitest';
import { ImportError, parseNodeFile, parsePodFile } from '../../src/cluster/nodes/kube-import.js';
import { renderNode } from '../../src/cluster/nodes/node-document.js';
import { formatBytes, formatFraction, formatMilli, quantityProblem } from '../../src/cluster/nodes/quantity.js';

const NOW = new Date('2024-05-01T00:00:00Z');
const list = (items: unknown[]) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
const pod = (name: string, spec: Record<string, unknown>) => ({ metadata: { name, namespace: 'default' }, spec: { nodeName: 'n1', ...spec }, status: { phase: 'Running' } });
const requests = (values: Record<string, string>) => ({ containers: [{ name: 'c', resources: { requests: values } }] });

function importError(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ImportError);
    return (error as Error).message;
  }
  throw new Error('the file was accepted');
}

describe('quantityProblem (at most 2^63-1 milli-units in magnitude, as Kubernetes MilliValue holds)', () => {
  it.each(['9223372036854775807m', '-9223372036854775807m', '9223372036854775.807', '8Pi', '9e15', '1e-99999999', '0e99999999'])('%s is accepted', (text) => {
    expect(quantityProblem(text)).toBeNull();
  });

  it.each(['9223372036854775808m', '-9223372036854775808m', '1e16', '8Ei', '1e400', '-1e400', '1e308', '1e99999999'])('%s is out of range', (text) => {
    expect(quantityProblem(text)).toMatch(/^out of range/);
  });

  it.each(['', 'abc', '1.2.3', '1 Gi'])('%j is malformed', (text) => {
    expect(quantityProblem(text)).toMatch(/must be a Kubernetes quantity/);
  });
});

describe('imports refuse out-of-range quantities, naming the field', () => {
  it.each([
    ['a container request', requests({ memory: '1e400' }), 'spec.containers.0.resources.requests.memory'],
    ['a container limit', { containers: [{ name: 'c', resources: { limits: { cpu: '1e308' } } }] }, 'spec.containers.0.resources.limits.cpu'],
    ['an init container', { containers: [], initContainers: [{ name: 'i', resources: { requests: { cpu: '-1e400' } } }] }, 'spec.initContainers.0.resources.requests.cpu'],
    ['the overhead', { containers: [], overhead: { memory: '8Ei' } }, 'spec.overhead.memory'],
    ['an extended resource', requests({ 'nvidia.com/gpu': '1e30' }), 'spec.containers.0.resources.requests.nvidia.com/gpu'],
  ])('%s', (_name, spec, path) => {
    const message = importError(() => parsePodFile(list([pod('fine', requests({ cpu: '1' })), pod('huge', spec)]), NOW));
    expect(message).toMatch(/nothing changed/);
    expect(message).toContain(`items[1].${path}: out of range`);
  });

  it('a malformed quantity is named by its field too', () => {
    expect(importError(() => parsePodFile(list([pod('bad', requests({ cpu: '1.2.3' }))]), NOW))).toContain('items[0].spec.containers.0.resources.requests.cpu: must be a Kubernetes quantity');
  });

  it('node capacity and allocatable', () => {
    const node = { metadata: { name: 'n1' }, status: { capacity: { memory: '1e400' }, allocatable: { cpu: '1e19' } } };
    const message = importError(() => parseNodeFile(list([node]), NOW));
    expect(message).toContain('items[0].status.capacity.memory: out of range');
    expect(message).toContain('items[0].status.allocatable.cpu: out of range');
  });

  it('the largest accepted values sum to finite usage', () => {
    const [stored] = parsePodFile(list([pod('big', { containers: [0, 1, 2].map(() => ({ resources: { requests: { memory: '9e15' } } })) })]), NOW);
    expect(stored?.memoryRequests).toBe(27e15);
  });
});

describe('stored usage that is not finite (written before imports refused it) renders', () => {
  it.each([
    [Number.POSITIVE_INFINITY, '9223372036854775807m', '9223372036854775807'],
    [Number.NEGATIVE_INFINITY, '-9223372036854775807m', '-9223372036854775807'],
    [Number.NaN, '0', '0'],
  ])('%d', (value, milli, bytes) => {
    expect(formatMilli(value)).toBe(milli);
    expect(formatBytes(value)).toBe(bytes);
  });

  it.each([
    [Number.POSITIVE_INFINITY, 4000, '9223372036854775807%'],
    [Number.NaN, 4000, '0%'],
    [1e300, 1, `${BigInt(1e302)}%`],
    [5, Number.POSITIVE_INFINITY, '0%'],
  ])('formatFraction(%d, %d) = %s', (used, allocatable, expected) => {
    expect(formatFraction(used, allocatable)).toBe(expected);
  });

  it('a node whose usage is Infinity gets its annotations instead of failing the page', () => {
    const json = JSON.stringify({ metadata: { name: 'n1' }, status: { allocatable: { cpu: '4', memory: '1e400' } } });
    const node = renderNode(json, { cpuRequests: Number.POSITIVE_INFINITY, cpuLimits: 0, memoryRequests: Number.POSITIVE_INFINITY, memoryLimits: Number.NaN }, true);
    expect(node.metadata.annotations).toMatchObject({
      'node.kubesphere.io/cpu-requests': '9223372036854775807m',
      'node.kubesphere.io/memory-requests': '9223372036854775807',
      'node.kubesphere.io/memory-limits': '0',
      // The stored allocatable memory is out of range: nothing allocatable, as for a malformed one.
      'node.kubesphere.io/memory-requests-fraction': '0%',
    });
  });
});
