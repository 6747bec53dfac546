import { Errors } from '../../infra/errors.js';
import type { Clock } from '../clock.js';
import { describeHostNode } from './host-node.js';
import { parseNodeFile, parsePodFile } from './kube-import.js';
import { type KubeNode, nodeSchema, toApiNode, toStoredNode } from './node-document.js';
import { NodeIndexCache } from './node-index.js';
import { matchesCodeFilters, type NodeListPlan, planNodeList, type QueryValue } from './node-query.js';
import type { NodesRepo } from './nodes.repo.js';
import { usageAnnotations, ZERO_USAGE } from './pod-usage.js';
import type { PodsRepo } from './pods.repo.js';

export interface NodeList {
  items: KubeNode[];
  totalItems: number;
}

export interface NodeRouteContext {
  /** The API group of the request path, for error details. */
  group: string;
}

export type NodeQueryStrategy = 'auto' | 'database' | 'cache';

/** How far an import is: the file validated, then documents written (after each chunk). */
export type ImportProgress = (progress: { step: 'validated' | 'written'; done: number; total: number }) => void;

export function createNodesService(deps: { nodes: NodesRepo; pods: PodsRepo; clock: Clock; strategy: NodeQueryStrategy }) {
  const { nodes, pods, clock } = deps;
  const cache = new NodeIndexCache(nodes);
  let useCache: Promise<boolean> | undefined;
  const shouldUseCache = () => {
    useCache ??= deps.strategy === 'auto' ? nodes.isFerretDb() : Promise.resolve(deps.strategy === 'cache');
    return useCache;
  };

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
    const candidates = (await nodes.findCandidates(plan.filter, plan.sort)).filter((node) => matchesCodeFilters(plan.codeFilters, node));
    const selected = window.kind === 'all' ? candidates : window.kind === 'none' ? [] : candidates.slice(window.skip, window.skip + window.limit);
    return { page: await objectsInOrder(selected.map((node) => node._id)), totalItems: candidates.length };
  }

  async function objectsInOrder(names: string[]): Promise<{ _id: string; json: string }[]> {
    const json = await nodes.findJsonByNames(names);
    return names.flatMap((name) => (json.has(name) ? [{ _id: name, json: json.get(name) as string }] : []));
  }

  /** Adds the eight usage annotations; none at all when no pod is stored (reference quirk). */
  async function annotate(stored: { _id: string; json: string }[], includeTerminated: boolean): Promise<KubeNode[]> {
    if (stored.length === 0) return [];
    const withPods = await pods.hasAny();
    const usage = withPods ? await pods.usageFor(stored.map((node) => node._id), includeTerminated) : new Map();
    return stored.map(({ _id, json }) => {
      const node = toApiNode(json) as KubeNode & { status?: { allocatable?: Record<string, string> } };
      if (withPods) {
        node.metadata.annotations = { ...(node.metadata.annotations ?? {}), ...usageAnnotations(usage.get(_id) ?? ZERO_USAGE, node.status?.allocatable) };
      }
      return node;
    });
  }

  return {
    async list(query: Record<string, QueryValue>): Promise<NodeList> {
      const plan = planNodeList(query);
      if (plan.matchesNothing) return { items: [], totalItems: 0 };
      if (!plan.readsAnnotations && (await shouldUseCache())) {
        const { names, totalItems } = await cache.page(plan);
        return { items: await annotate(await objectsInOrder(names), false), totalItems };
      }
      const { page, totalItems } = await pageFromDatabase(plan);
      return { items: await annotate(page, false), totalItems };
    },

    async get(name: string, context: NodeRouteContext): Promise<KubeNode> {
      const found = await nodes.findByName(name);
      if (!found) throw Errors.k8s(404, 'NotFound', `node "${name}" not found`, { name, group: context.group, kind: 'nodes' });
      // As the reference's single GET does, terminated pods count too.
      const [node] = await annotate([found], true);
      return node as KubeNode;
    },

    async importNodes(text: string, onProgress?: ImportProgress) {
      const docs = parseNodeFile(text, clock.now());
      onProgress?.({ step: 'validated', done: docs.length, total: docs.length });
      const owners = await nodes.findUidOwners(docs.map((doc) => doc.uid));
      const names = new Map(docs.map((doc) => [doc.uid, doc._id]));
      const clash = owners.find((owner) => names.get(owner.uid) !== owner._id);
      if (clash) {
        throw Errors.conflict(`the file was not imported, nothing changed: uid ${clash.uid} of node "${names.get(clash.uid)}" already belongs to node "${clash._id}"`);
      }
      const counts = await nodes.upsertMany(docs, (done) => onProgress?.({ step: 'written', done, total: docs.length }));
      return { kind: 'NodeList', ...counts, names: docs.map((doc) => doc._id) };
    },

    async importPods(text: string, onProgress?: ImportProgress) {
      const docs = parsePodFile(text, clock.now());
      onProgress?.({ step: 'validated', done: docs.length, total: docs.length });
      const counts = await pods.upsertMany(docs, (done) => onProgress?.({ step: 'written', done, total: docs.length }));
      return { kind: 'PodList', ...counts, count: docs.length };
    },

    /** Registers this machine as a node unless a node of its name exists. */
    async registerHostNode(): Promise<{ name: string; created: boolean }> {
      const now = clock.now();
      const doc = toStoredNode(nodeSchema.parse(await describeHostNode(now)), now);
      return { name: doc._id, created: await nodes.insertIfAbsent(doc) };
    },
  };
}

export type NodesService = ReturnType<typeof createNodesService>;
