/**
 * The shape of a workflow graph for one run: edges by the nodes they join, and which incoming
 * edges of a node lie on a cycle through it. Pure; used by the dispatcher.
 */
import { type RuntimeEdge, SELECTED_TOOLS_HANDLE } from './types.js';

/** A node's incoming edges: those on a cycle through the node itself, and the rest. */
export interface IncomingEdges {
  common: RuntimeEdge[];
  recursive: RuntimeEdge[];
}

/**
 * The edges of one run by the nodes they leave and enter. A run changes edge statuses, never
 * which nodes an edge joins, so the graph's cycles are found once per run: an edge u → v lies on
 * a cycle through v exactly when u and v are in the same strongly connected component (tool
 * selections are not followed). Searching from each node on every check instead made a run
 * quadratic in its size (a 60-node chain spent 85% of its dispatch time there).
 */
export class EdgeIndex {
  private readonly outgoing = new Map<string, RuntimeEdge[]>();
  private readonly incoming = new Map<string, RuntimeEdge[]>();
  private readonly component: Map<string, number>;
  private readonly splits = new Map<string, IncomingEdges>();

  constructor(edges: readonly RuntimeEdge[]) {
    for (const edge of edges) {
      listIn(this.outgoing, edge.source).push(edge);
      listIn(this.incoming, edge.target).push(edge);
    }
    this.component = stronglyConnectedComponents(this.outgoing);
  }

  /** Every edge leaving the node, in the graph's order. */
  from(nodeId: string): readonly RuntimeEdge[] {
    return this.outgoing.get(nodeId) ?? NO_EDGES;
  }

  /** Every edge entering the node, in the graph's order. */
  into(nodeId: string): readonly RuntimeEdge[] {
    return this.incoming.get(nodeId) ?? NO_EDGES;
  }

  /** The node's incoming edges (tool selections aside), those on a cycle through it apart. */
  split(nodeId: string): IncomingEdges {
    let split = this.splits.get(nodeId);
    if (split) return split;
    split = { common: [], recursive: [] };
    const own = this.component.get(nodeId);
    for (const edge of this.into(nodeId)) {
      if (edge.sourceHandle === SELECTED_TOOLS_HANDLE) continue;
      (own !== undefined && this.component.get(edge.source) === own ? split.recursive : split.common).push(edge);
    }
    this.splits.set(nodeId, split);
    return split;
  }
}

const NO_EDGES: readonly RuntimeEdge[] = [];

function listIn(map: Map<string, RuntimeEdge[]>, key: string): RuntimeEdge[] {
  let list = map.get(key);
  if (!list) {
    list = [];
    map.set(key, list);
  }
  return list;
}

/**
 * Tarjan's algorithm over the edges that are followed (not tool selections), without recursion:
 * a component number for every node an edge touches. Nodes on a common cycle share a number.
 */
function stronglyConnectedComponents(outgoing: ReadonlyMap<string, readonly RuntimeEdge[]>): Map<string, number> {
  const component = new Map<string, number>();
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const open: string[] = [];
  const isOpen = new Set<string>();
  const path: { node: string; next: number }[] = [];
  let components = 0;
  const enter = (node: string) => {
    order.set(node, order.size);
    low.set(node, order.size - 1);
    open.push(node);
    isOpen.add(node);
    path.push({ node, next: 0 });
  };
  const roots = new Set<string>();
  for (const [source, edges] of outgoing) {
    roots.add(source);
    for (const edge of edges) roots.add(edge.target);
  }
  for (const root of roots) {
    if (order.has(root)) continue;
    enter(root);
    while (path.length > 0) {
      const frame = path[path.length - 1]!;
      const edges = outgoing.get(frame.node) ?? NO_EDGES;
      if (frame.next < edges.length) {
        const edge = edges[frame.next++]!;
        if (edge.sourceHandle === SELECTED_TOOLS_HANDLE) continue;
        if (!order.has(edge.target)) enter(edge.target);
        else if (isOpen.has(edge.target)) low.set(frame.node, Math.min(low.get(frame.node)!, order.get(edge.target)!));
        continue;
      }
      path.pop();
      const parent = path[path.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) !== order.get(frame.node)) continue;
      // frame.node roots a component: everything opened after it belongs to it.
      const id = components++;
      let member: string;
      do {
        member = open.pop()!;
        isOpen.delete(member);
        component.set(member, id);
      } while (member !== frame.node);
    }
  }
  return component;
}
