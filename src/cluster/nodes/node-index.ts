import { AnswerMemo, MemoisedAnswer } from '../../infra/answer-memo.js';
import { LruMap } from '../../infra/lru-map.js';
import { createStampedCache } from '../../infra/stamped-read-model.js';
import type { VersionStamps } from '../../infra/version-stamps.js';
import type { Clock } from '../clock.js';
import { CLUSTER_STAMPS } from '../stamps.js';
import { compileFilter, sortComparator } from './filter-eval.js';
import { type KubeNode, renderNode } from './node-document.js';
import { compileCodeFilters, type NodeListPlan } from './node-query.js';
import type { NodeIndexEntry, NodesRepo } from './nodes.repo.js';
import type { NodeUsage, PodsRepo } from './pods.repo.js';

/** Filtered, sorted views and serialised pages kept per snapshot (the least recently used goes first). */
const MAX_VIEWS = 64;
const MAX_PAGES = 64;
/**
 * The pages' summed bytes per snapshot. A full list is ~3 KB a node (~30 MB at 10,000 nodes): 64
 * of them would be ~2 GB. A page heavier than this alone is not kept (sent, not memoised).
 */
export const MAX_PAGE_BYTES = 64 * 1024 * 1024;
/**
 * Query strings remembered per snapshot with the key of their plan (characters of both counted):
 * a repeated string is not planned again, and strings that differ only in what the plan ignores
 * (unknown keys, `limit=abc` vs none) share one page.
 */
const MAX_QUERY_KEYS = 4096;
const MAX_QUERY_KEY_CHARS = 4 * 1024 * 1024;

/** The memo of serialised pages: bounded by bytes too, and an answer over the bound alone does not empty it. */
class PageMemo extends AnswerMemo {
  constructor() {
    super(MAX_PAGES, { weigh: (bytes) => bytes.length, max: MAX_PAGE_BYTES });
  }

  override set(key: string, bytes: Buffer): void {
    if (bytes.length > MAX_PAGE_BYTES) this.delete(key);
    else super.set(key, bytes);
  }
}

/** What decides a page's bytes: a plan that matches nothing is the same empty answer whatever its window. */
export function planKey(plan: NodeListPlan): string {
  return plan.matchesNothing ? 'none' : JSON.stringify([plan.filter, plan.codeFilters, plan.sort, plan.window]);
}

export interface NodePage {
  items: KubeNode[];
  totalItems: number;
}

/** A snapshot is loaded again after this long even when the nodes stamp has not moved. */
export const NODE_SNAPSHOT_MAX_AGE_MS = 60_000;

/**
 * One version of every stored node, with its pods' usage: the read model the list and the single
 * GET are served from. Immutable but for what it memoises: each node's rendered API object (shared
 * by every reply, never mutated), the filtered, sorted view of each query and each page's bytes.
 */
export class NodeSnapshot {
  private readonly byName: Map<string, NodeIndexEntry>;
  private readonly rendered = new Map<string, KubeNode>();
  private readonly views = new LruMap<NodeIndexEntry[]>(MAX_VIEWS);
  private readonly pages = new PageMemo();
  /** Raw query string → its plan's key (see MAX_QUERY_KEYS). */
  private readonly planKeys = new LruMap<{ key: string; chars: number }>(MAX_QUERY_KEYS, { weigh: (entry) => entry.chars, max: MAX_QUERY_KEY_CHARS });

  constructor(
    private readonly entries: NodeIndexEntry[],
    private readonly usage: Map<string, NodeUsage>,
    /** Pods are stored: a single node is annotated. */
    private readonly withPods: boolean,
    /** A pod is not terminated: the list is annotated (the reference counts only those there). */
    private readonly withActivePods: boolean,
  ) {
    this.byName = new Map(entries.map((entry) => [entry._id, entry]));
  }

  /** The nodes a query selects, in its order (filters, then sort, computed once per query). */
  private view(plan: NodeListPlan): NodeIndexEntry[] {
    const key = JSON.stringify([plan.filter, plan.codeFilters, plan.sort]);
    let view = this.views.get(key);
    if (!view) {
      const hasFilter = Object.keys(plan.filter).length > 0 || plan.codeFilters.length > 0;
      let matching = [...this.entries];
      if (hasFilter) {
        const matches = compileFilter(plan.filter);
        const matchesCode = compileCodeFilters(plan.codeFilters);
        matching = this.entries.filter((entry) => matches(entry) && matchesCode(entry));
      }
      view = matching.sort(sortComparator(plan.sort) as (a: NodeIndexEntry, b: NodeIndexEntry) => number);
      this.views.set(key, view);
    }
    return view;
  }

  /** A listed node: usage of its running pods (not Succeeded or Failed). */
  private listed(entry: NodeIndexEntry): KubeNode {
    let node = this.rendered.get(entry._id);
    if (!node) {
      node = renderNode(entry.json, this.usage.get(entry._id)?.active, this.withActivePods);
      this.rendered.set(entry._id, node);
    }
    return node;
  }

  page(plan: NodeListPlan): NodePage {
    const view = this.view(plan);
    const { window } = plan;
    const selected = window.kind === 'all' ? view : window.kind === 'none' ? [] : view.slice(window.skip, window.skip + window.limit);
    return { items: selected.map((entry) => this.listed(entry)), totalItems: view.length };
  }

  /**
   * A page as the route sends it: serialised once per plan while this snapshot is current. The
   * raw query string is remembered with its plan's key, so a repeated query is not planned again
   * (the answer depends on nothing else); `plan` runs for a query string not seen yet, and again
   * only when its page's bytes were dropped.
   */
  pageAnswer(rawQuery: string, plan: () => NodeListPlan): MemoisedAnswer<NodePage> {
    let planned: NodeListPlan | undefined;
    let key = this.planKeys.get(rawQuery)?.key;
    if (key === undefined) {
      planned = plan();
      key = planKey(planned);
      this.planKeys.set(rawQuery, { key, chars: rawQuery.length + key.length });
    }
    return new MemoisedAnswer(this.pages, key, () => {
      planned ??= plan();
      return planned.matchesNothing ? { items: [], totalItems: 0 } : this.page(planned);
    });
  }

  /** One node as the single GET shows it: terminated pods count too (reference quirk). */
  get(name: string): KubeNode | null {
    const entry = this.byName.get(name);
    return entry ? renderNode(entry.json, this.usage.get(name)?.all, this.withPods) : null;
  }
}

/**
 * The per-process node index. Each request reads the nodes stamp (leased, so at most a few small
 * reads a second) and gets the snapshot of that version, loaded once (four reads: nodes, usage,
 * whether any pod exists, whether one runs) when the stamp moved. Every node or pod write of any
 * process bumps the stamp before it answers, so the next request anywhere sees it. A page costs
 * no node read. An old snapshot is loaded again even at the same stamp: a writer stopped before
 * its bump (its documents written, the stamp not moved) is seen within NODE_SNAPSHOT_MAX_AGE_MS.
 */
export function createNodeIndex(deps: { nodes: NodesRepo; pods: PodsRepo; stamps: VersionStamps; clock: Clock }) {
  const { nodes, pods, stamps, clock } = deps;
  const cache = createStampedCache<null, NodeSnapshot>({
    cacheKey: () => 'nodes',
    stampOf: () => stamps.read(CLUSTER_STAMPS.nodes),
    load: async () => {
      const [entries, usage, withPods, withActivePods] = await Promise.all([nodes.loadIndexEntries(), pods.loadUsage(), pods.hasAny(), pods.hasActive()]);
      return new NodeSnapshot(entries, new Map(usage.map((entry) => [entry._id, entry])), withPods, withActivePods);
    },
    maxViews: 1,
    maxAgeMs: NODE_SNAPSHOT_MAX_AGE_MS,
    now: () => clock.now().getTime(),
  });
  return {
    /** The snapshot of the stored nodes as of now. */
    current: (): Promise<NodeSnapshot> => cache.view(null),
  };
}
