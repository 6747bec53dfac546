import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { LatencyHistogram } from '../../src/infra/latency-histogram.js';

const BOUNDS = [0.005, 0.01, 0.1, 1];
const OBSERVATIONS: [string, string, number, number][] = [
  ['GET', '/healthz', 200, 0.001],
  ['GET', '/healthz', 200, 0.005],
  ['POST', '/api/core/app/list', 200, 0.02],
  ['GET', '/healthz', 200, 0.5],
  ['POST', '/api/core/app/list', 401, 3],
  ['GET', '(unmatched)', 404, 0.0001],
  ['GET', '/a "quoted" \\ route', 200, 0.01],
];

/** The text a registry holding only `register(registry)`'s metric writes. */
async function scrape(register: (registry: Registry) => void): Promise<string> {
  const registry = new Registry();
  register(registry);
  return registry.metrics();
}

describe('LatencyHistogram', () => {
  it('writes exactly what prom-client Histogram writes for the same observations', async () => {
    const ours = await scrape((registry) => {
      const histogram = new LatencyHistogram('http_request_duration_seconds', 'request duration in seconds', BOUNDS);
      registry.registerMetric(histogram.asMetric());
      for (const [method, route, status, seconds] of OBSERVATIONS) histogram.observe(method, route, status, seconds);
    });
    const reference = await scrape((registry) => {
      const histogram = new Histogram({ name: 'http_request_duration_seconds', help: 'request duration in seconds', labelNames: ['method', 'route', 'status_code'], buckets: BOUNDS, registers: [registry] });
      for (const [method, route, status, seconds] of OBSERVATIONS) histogram.observe({ method, route, status_code: status }, seconds);
    });
    expect(ours).toBe(reference);
    expect(ours).toContain('http_request_duration_seconds_bucket{le="0.005",method="GET",route="/healthz",status_code="200"} 2');
    expect(ours).toContain('http_request_duration_seconds_count{method="POST",route="/api/core/app/list",status_code="401"} 1');
  });

  it('counts a value equal to a bound in that bucket, and a value above all only in +Inf', async () => {
    const histogram = new LatencyHistogram('latency', 'help', [1, 2]);
    histogram.observe('GET', '/x', 200, 1);
    histogram.observe('GET', '/x', 200, 5);
    const { values } = await histogram.get();
    const sample = (name: string, le?: number | string) => values.find((value) => value.metricName === name && value.labels.le === le)?.value;
    expect(sample('latency_bucket', 1)).toBe(1);
    expect(sample('latency_bucket', 2)).toBe(1);
    expect(sample('latency_bucket', '+Inf')).toBe(2);
    expect(sample('latency_sum')).toBe(6);
    histogram.reset();
    expect((await histogram.get()).values).toEqual([]);
  });
});
