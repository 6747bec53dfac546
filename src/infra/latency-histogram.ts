import type { Metric } from 'prom-client';

type LatencyLabels = { method: string; route: string; status_code: number };

interface Series {
  labels: LatencyLabels;
  /** Observations per bucket (not cumulative); the last slot is above every bound. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/**
 * A Prometheus histogram of request latency by method, route and status, written as prom-client's
 * Histogram writes it (same names, labels, order and values), for the one metric every request
 * moves. prom-client's observe validates the labels, builds their hash string and allocates a
 * closure on each call; here a request costs one Map lookup and three additions.
 */
export class LatencyHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
  ) {}

  observe(method: string, route: string, statusCode: number, seconds: number): void {
    const key = `${statusCode} ${method} ${route}`;
    let series = this.series.get(key);
    if (!series) {
      series = { labels: { method, route, status_code: statusCode }, counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 };
      this.series.set(key, series);
    }
    let bucket = 0;
    while (bucket < this.bounds.length && seconds > this.bounds[bucket]!) bucket++;
    series.counts[bucket]! += 1;
    series.sum += seconds;
    series.count += 1;
  }

  /** The samples as prom-client's registry reads them from a metric. */
  async get() {
    const bucketName = `${this.name}_bucket`;
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const { labels, counts, sum, count } of this.series.values()) {
      let cumulative = 0;
      this.bounds.forEach((bound, index) => {
        cumulative += counts[index]!;
        values.push({ labels: { le: bound, ...labels }, value: cumulative, metricName: bucketName });
      });
      values.push({ labels: { le: '+Inf', ...labels }, value: count, metricName: bucketName });
      values.push({ labels, value: sum, metricName: `${this.name}_sum` });
      values.push({ labels, value: count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.series.clear();
  }

  /** For `registry.registerMetric`, whose type names prom-client's own metric classes. */
  asMetric(): Metric {
    return this as unknown as Metric;
  }
}
