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
import { NODES_PER_SLICE, serialiseListedNode, serialiseListInSlices, yieldToLoop } from './sliced-list.js';

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

/**
 * A plan whose answer may hold more nodes than one slice: built a slice at a time (sliced-list.ts)
 * instead of rendered and serialised in one synchronous stretch. Known from the plan alone, so a
 * small page pays nothing for it.
 */
function mayBeLarge(plan: NodeListPlan): boolean {
  if (plan.matchesNothing) return false;
  return plan.window.kind === 'all' || (plan.window.kind === 'page' && plan.window.limit > NODES_PER_SLICE);
}

/** Nodes tested against a large answer's filters between two yields (~1-5 µs each). */
const ENTRIES_PER_FILTER_SLICE = 1000;

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
  /** Each node as a large answer writes it (serialised once per snapshot, like `rendered`). */
  private readonly listedJson = new Map<string, string>();
  /** Large answers being built, by page key: concurrent requests for one share the work. */
  private readonly building = new Map<string, Promise<Buffer | null>>();
  /** Every node in each order asked for (a total order: filtering it keeps it sorted). */
  private readonly sorted = new Map<string, NodeIndexEntry[]>();
  private readonly views = new LruMap<NodeIndexEntry[]>(MAX_VIEWS);
  private readonly pages = new PageMemo();
  /** Raw query string → its plan's key (see MAX_QUERY_KEYS). */
  private readonly planKeys = new LruMap<{ key: string; chars: number; large: boolean }>(MAX_QUERY_KEYS, { weigh: (entry) => entry.chars, max: MAX_QUERY_KEY_CHARS });

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

  private static viewKey(plan: NodeListPlan): string {
    return JSON.stringify([plan.filter, plan.codeFilters, plan.sort]);
  }

  /** The nodes a query selects, in its order (filters, then sort, computed once per query). */
  private view(plan: NodeListPlan): NodeIndexEntry[] {
    const key = NodeSnapshot.viewKey(plan);
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

  /**
   * The same view as `view`, for large answers: the snapshot sorted once per order, then filtered
   * a slice at a time with yields (a fresh selector costs no sort and no long stretch).
   */
  private async viewInSlices(plan: NodeListPlan): Promise<NodeIndexEntry[]> {
    const key = NodeSnapshot.viewKey(plan);
    const known = this.views.get(key);
    if (known) return known;
    const sortKey = JSON.stringify(plan.sort);
    let ordered = this.sorted.get(sortKey);
    if (!ordered) {
      ordered = [...this.entries].sort(sortComparator(plan.sort) as (a: NodeIndexEntry, b: NodeIndexEntry) => number);
      this.sorted.set(sortKey, ordered);
    }
    if (Object.keys(plan.filter).length === 0 && plan.codeFilters.length === 0) {
      this.views.set(key, ordered);
      return ordered;
    }
    const matches = compileFilter(plan.filter);
    const matchesCode = compileCodeFilters(plan.codeFilters);
    const view: NodeIndexEntry[] = [];
    for (let start = 0; start < ordered.length; start += ENTRIES_PER_FILTER_SLICE) {
      if (start > 0) await yieldToLoop();
      for (const entry of ordered.slice(start, start + ENTRIES_PER_FILTER_SLICE)) if (matches(entry) && matchesCode(entry)) view.push(entry);
    }
    this.views.set(key, view);
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
      this.planKeys.set(rawQuery, { key, chars: rawQuery.length + key.length, large: mayBeLarge(planned) });
    }
    return new MemoisedAnswer(this.pages, key, () => {
      planned ??= plan();
      return planned.matchesNothing ? { items: [], totalItems: 0 } : this.page(planned);
    });
  }

  /**
   * The answer the route sends (as `pageAnswer`), but one that may hold more than a slice of nodes
   * is built without holding the event loop (its bytes in the memo before it returns, so the route
   * sends them as they are). A small page returns at once: one lookup more than `pageAnswer`.
   */
  listAnswer(rawQuery: string, plan: () => NodeListPlan): MemoisedAnswer<NodePage> | Promise<MemoisedAnswer<NodePage>> {
    const answer = this.pageAnswer(rawQuery, plan);
    if (!this.planKeys.peek(rawQuery)?.large || this.pages.peek(answer.key) !== undefined) return answer;
    return this.largeAnswer(answer, plan());
  }

  private async largeAnswer(answer: MemoisedAnswer<NodePage>, plan: NodeListPlan): Promise<MemoisedAnswer<NodePage>> {
    let pending = this.building.get(answer.key);
    if (!pending) {
      pending = this.serialiseLarge(answer.key, plan).finally(() => this.building.delete(answer.key));
      this.building.set(answer.key, pending);
    }
    const bytes = await pending;
    // Few nodes matched: the usual path. Bytes over the memo's bound were not kept: sent once from a memo of their own.
    if (bytes === null || this.pages.peek(answer.key) === bytes) return answer;
    const once = new AnswerMemo(1);
    once.set(answer.key, bytes);
    return new MemoisedAnswer(once, answer.key, answer.compute);
  }

  /** The answer's bytes built slice by slice and kept in the memo; null when it selects no more than a slice. */
  private async serialiseLarge(key: string, plan: NodeListPlan): Promise<Buffer | null> {
    const view = await this.viewInSlices(plan);
    const { window } = plan;
    const selected = window.kind === 'page' ? view.slice(window.skip, window.skip + window.limit) : view;
    if (selected.length <= NODES_PER_SLICE) return null;
    const bytes = await serialiseListInSlices(selected.length, view.length, (index) => this.listedJsonOf(selected[index] as NodeIndexEntry));
    this.pages.set(key, bytes);
    return bytes;
  }

  /** A listed node's JSON; its rendered object is not kept (the string is what large answers reuse). */
  private listedJsonOf(entry: NodeIndexEntry): string {
    let json = this.listedJson.get(entry._id);
    if (json === undefined) {
      json = serialiseListedNode(this.rendered.get(entry._id) ?? renderNode(entry.json, this.usage.get(entry._id)?.active, this.withActivePods));
      this.listedJson.set(entry._id, json);
    }
    return json;
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
