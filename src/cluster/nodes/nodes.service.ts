import os from 'node:os';
import { MemoisedAnswer, NO_MEMO } from '../../infra/answer-memo.js';
import { ClusterErrors, Errors } from '../../infra/errors.js';
import { bumpAfterWrite, type VersionStamps } from '../../infra/version-stamps.js';
import type { Clock } from '../clock.js';
import { CLUSTER_STAMPS } from '../stamps.js';
import { describeHostNode } from './host-node.js';
import { parseNodeFile, parsePodFile } from './kube-import.js';
import { type KubeNode, nodeSchema, renderNode, toStoredNode } from './node-document.js';
import { createNodeIndex } from './node-index.js';
import { compileCodeFilters, type NodeListPlan, planNodeList, type QueryValue } from './node-query.js';
import type { NodesRepo } from './nodes.repo.js';
import type { PodsRepo } from './pods.repo.js';

export interface NodeList {
  items: KubeNode[];
  totalItems: number;
}

export interface NodeRouteContext {
  /** The API group of the request path, for error details. */
  group: string;
}

/** `database`: filters, sort and paging in the database; otherwise (`auto`, `cache`) the in-process index. */
export type NodeQueryStrategy = 'auto' | 'database' | 'cache';

/** How far an import is: the file validated, then documents written (after each chunk). */
export type ImportProgress = (progress: { step: 'validated' | 'written'; done: number; total: number }) => void;

/** `prune`: after the file is written, delete what is stored and not in the file. */
export interface ImportOptions {
  prune?: boolean;
}

export function createNodesService(deps: {
  nodes: NodesRepo;
  pods: PodsRepo;
  clock: Clock;
  stamps: VersionStamps;
  strategy: NodeQueryStrategy;
  /** The name of the machine host registration describes (default its hostname). */
  hostname?: () => string;
}) {
  const { nodes, pods, clock, stamps } = deps;
  const hostname = deps.hostname ?? os.hostname;
  const index = createNodeIndex({ nodes, pods, stamps, clock });
  const inDatabase = deps.strategy === 'database';
  /**
   * Every node and pod write goes through here: other processes reload their index at their next
   * request. The stamp moves even when the write fails part-way, since earlier chunks have landed.
   */
  function writeNodes<T>(write: () => Promise<T>, changed?: (result: T) => boolean): Promise<T> {
    return bumpAfterWrite(write, () => stamps.bump(CLUSTER_STAMPS.nodes), changed);
  }

  /** Filters, sorting and paging pushed into the database; `>`/`<` requirements finished in code. */
  async function pageFromDatabase(plan: NodeListPlan): Promise<{ page: { _id: string; json: string }[]; totalItems: number }> {
    const { window } = plan;
    if (plan.codeFilters.length === 0) {
      const totalItems = await nodes.count(plan.filter);
      if (window.kind === 'none' || (window.kind === 'page' && window.skip >= totalItems)) return { page: [], totalItems };
      const page = window.kind === 'page' ? await nodes.findPage(plan.filter, plan.sort, window.skip, window.limit) : await nodes.findPage(plan.filter, plan.sort, 0, null);
      return { page, totalItems };
    }
    // Narrow in the database, finish in code on names and pairs only.
    const candidates = (await nodes.findCandidates(plan.filter, plan.sort)).filter(compileCodeFilters(plan.codeFilters));
    const selected = window.kind === 'all' ? candidates : window.kind === 'none' ? [] : candidates.slice(window.skip, window.skip + window.limit);
    const json = await nodes.findJsonByNames(selected.map((node) => node._id));
    return { page: selected.flatMap((node) => (json.has(node._id) ? [{ _id: node._id, json: json.get(node._id) as string }] : [])), totalItems: candidates.length };
  }

  /** Adds the usage annotations from the database (the `database` strategy). */
  async function renderFromDatabase(stored: { _id: string; json: string }[], includeTerminated: boolean): Promise<KubeNode[]> {
    if (stored.length === 0) return [];
    // A list is annotated when a pod is running, a single node when any pod is stored (as the reference).
    const withPods = await (includeTerminated ? pods.hasAny() : pods.hasActive());
    const usage = withPods ? await pods.usageFor(stored.map((node) => node._id), includeTerminated) : new Map();
    return stored.map(({ _id, json }) => renderNode(json, usage.get(_id), withPods));
  }

  async function getFromDatabase(name: string): Promise<KubeNode | null> {
    const stored = await nodes.findByName(name);
    return stored ? ((await renderFromDatabase([stored], true))[0] ?? null) : null;
  }

  async function listFromDatabase(plan: NodeListPlan): Promise<NodeList> {
    const { page, totalItems } = await pageFromDatabase(plan);
    return { items: await renderFromDatabase(page, false), totalItems };
  }

  return {
    /**
     * The list answer for `query`, parsed from `rawQuery` (the URL's query string); from the index,
     * a repeated query string is sent as the bytes of its first answer.
     */
    async list(query: Record<string, QueryValue>, rawQuery: string): Promise<MemoisedAnswer<NodeList>> {
      if (!inDatabase) return (await index.current()).listAnswer(rawQuery, () => planNodeList(query));
      const plan = planNodeList(query);
      return new MemoisedAnswer(NO_MEMO, '', () => (plan.matchesNothing ? { items: [], totalItems: 0 } : listFromDatabase(plan)));
    },

    async get(name: string, context: NodeRouteContext): Promise<KubeNode> {
      // As the reference's single GET does, terminated pods count too.
      const found = inDatabase ? await getFromDatabase(name) : (await index.current()).get(name);
      if (!found) throw ClusterErrors.nodeNotFound(name, context.group);
      return found;
    },

    /**
     * Upserts the file's nodes by name; with `prune`, a node the file does not list is deleted
     * afterwards (it was removed from the cluster), as `kubectl apply --prune` does.
     */
    async importNodes(text: string, onProgress?: ImportProgress, options: ImportOptions = {}) {
      const docs = parseNodeFile(text, clock.now());
      onProgress?.({ step: 'validated', done: docs.length, total: docs.length });
      const owners = await nodes.findUidOwners(docs.map((doc) => doc.uid));
      const names = new Map(docs.map((doc) => [doc.uid, doc._id]));
      const clash = owners.find((owner) => names.get(owner.uid) !== owner._id);
      if (clash) {
        throw Errors.conflict(`the file was not imported, nothing changed: uid ${clash.uid} of node "${names.get(clash.uid)}" already belongs to node "${clash._id}"`);
      }
      const counts = await writeNodes(async () => {
        const written = await nodes.upsertMany(docs, (done) => onProgress?.({ step: 'written', done, total: docs.length }));
        return options.prune ? { ...written, deleted: await nodes.deleteAllExcept(docs.map((doc) => doc._id)) } : written;
      });
      return { kind: 'NodeList', ...counts, names: docs.map((doc) => doc._id) };
    },

    /** Upserts the file's pods by `namespace/name`; with `prune`, deletes the stored pods it does not list. */
    async importPods(text: string, onProgress?: ImportProgress, options: ImportOptions = {}) {
      const docs = parsePodFile(text, clock.now());
      onProgress?.({ step: 'validated', done: docs.length, total: docs.length });
      const counts = await writeNodes(() => pods.upsertMany(docs, (done) => onProgress?.({ step: 'written', done, total: docs.length }), options));
      return { kind: 'PodList', ...counts, count: docs.length };
    },

    /** Deletes one stored node (`cluster nodes delete`); its pods stay, as pods of a node that is gone. */
    async deleteNode(name: string): Promise<{ name: string; deleted: true }> {
      const deleted = await writeNodes(() => nodes.deleteByName(name), (gone) => gone);
      if (!deleted) throw Errors.notFound(`node "${name}" not found`);
      return { name, deleted: true };
    },

    /**
     * Registers this machine as a node unless the deployment has a node already (imported, or
     * registered by another replica or an earlier version): one host node per deployment, not
     * one per hostname a replica ever had.
     */
    async registerHostNode(): Promise<{ name: string; created: boolean }> {
      const now = clock.now();
      const doc = toStoredNode(nodeSchema.parse(await describeHostNode(now, hostname())), now);
      // Nothing is written when a node exists already: no stamp to move.
      const created = !(await nodes.hasAny()) && (await nodes.insertIfAbsent(doc));
      if (created) await stamps.bump(CLUSTER_STAMPS.nodes);
      return { name: doc._id, created };
    },
  };
}

export type NodesService = ReturnType<typeof createNodesService>;
