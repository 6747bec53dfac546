import { matchesFilter, sortComparator } from './filter-eval.js';
import { matchesCodeFilters, type NodeListPlan } from './node-query.js';
import type { NodeIndexEntry, NodesRepo } from './nodes.repo.js';

/**
 * A compact, per-process index of the nodes (name, uid, creation time, status, label pairs,
 * alias; never the node objects), reloaded only when the stored version changes. It exists for
 * FerretDB 1.x, which serves nothing but `_id` equality and a bare limit from its indexes and
 * scans the whole collection for any filter, sort, skip or count: there a page of 10,000 nodes
 * would cost ten times a page of 1,000. Each request costs one version lookup, in-process
 * filtering of the compact entries, and point lookups of the page's objects.
 */
export class NodeIndexCache {
  private version: string | null | undefined;
  private entries: NodeIndexEntry[] = [];
  private sorted = new Map<string, NodeIndexEntry[]>();
  private loading: Promise<void> | null = null;

  constructor(private readonly nodes: NodesRepo) {}

  private async refresh(): Promise<void> {
    // The version is read before the entries: a write in between only causes one more reload.
    const version = await this.nodes.readVersion();
    if (version === this.version && this.version !== undefined) return;
    this.loading ??= (async () => {
      try {
        const entries = await this.nodes.loadIndexEntries();
        this.entries = entries;
        this.sorted = new Map();
        this.version = version;
      } finally {
        this.loading = null;
      }
    })();
    await this.loading;
  }

  private inOrder(sort: Record<string, 1 | -1>): NodeIndexEntry[] {
    const key = JSON.stringify(sort);
    let ordered = this.sorted.get(key);
    if (!ordered) {
      ordered = [...this.entries].sort(sortComparator(sort) as (a: NodeIndexEntry, b: NodeIndexEntry) => number);
      this.sorted.set(key, ordered);
    }
    return ordered;
  }

  /** The names on the requested page and the total after filtering. */
  async page(plan: NodeListPlan): Promise<{ names: string[]; totalItems: number }> {
    await this.refresh();
    const hasFilter = Object.keys(plan.filter).length > 0 || plan.codeFilters.length > 0;
    const matching = hasFilter
      ? this.inOrder(plan.sort).filter((entry) => matchesFilter(plan.filter, entry) && matchesCodeFilters(plan.codeFilters, entry))
      : this.inOrder(plan.sort);
    const { window } = plan;
    const selected = window.kind === 'all' ? matching : window.kind === 'none' ? [] : matching.slice(window.skip, window.skip + window.limit);
    return { names: selected.map((entry) => entry._id), totalItems: matching.length };
  }
}
