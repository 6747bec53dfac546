import { Gauge, type Registry } from 'prom-client';

/**
 * This process's open search indexes (dataset-index.ts), read at each scrape: how many, their
 * estimated bytes (the figure SEARCH_INDEX_MAX_BYTES bounds), and evictions since start.
 */
export function registerSearchIndexMetrics(registry: Registry, stats: () => { open: number; bytes: number; evictions: number }) {
  const gauge = (name: string, help: string, read: (figures: ReturnType<typeof stats>) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read(stats()));
      },
    });
  gauge('search_index_open_datasets', 'Dataset search indexes open in this process', (figures) => figures.open);
  gauge('search_index_bytes', 'Estimated memory of the open dataset search indexes (bounded by SEARCH_INDEX_MAX_BYTES)', (figures) => figures.bytes);
  gauge('search_index_evictions', 'Dataset search indexes evicted since start (least recently searched, past SEARCH_INDEX_MAX_BYTES)', (figures) => figures.evictions);
}
