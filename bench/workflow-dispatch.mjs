// The workflow dispatcher alone (src/domain/workflow/dispatch.ts), no server and no I/O: how a
// run's cost grows with the graph. Each graph is a chain of N nodes, every third node also fed
// from two nodes back (joins that wait), and its last node loops back to the middle once through
// a condition (a cycle, so some edges are recursive). Every node's runner answers at once, so
// the figure is the dispatcher's own work per run: deciding what runs, waits or is skipped and
// passing results along edges.
// Usage: node bench/workflow-dispatch.mjs [other build's dist dir] (builds this tree's dist first)
//   With a second dist directory (e.g. a worktree of an earlier revision, built), both are
//   measured in alternating rounds and printed side by side. BENCH_ROUNDS (default 5).
import { execSync } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const SIZES = [5, 20, 60, 120];
const rounds = Number(process.env.BENCH_ROUNDS) || 5;
const builds = [['this build', 'dist'], ...(process.argv[2] ? [['other build', process.argv[2]]] : [])];

function graph(size) {
  const nodes = [];
  const edges = [];
  const link = (from, to, handle = 'right') => edges.push({ source: `n${from}`, sourceHandle: `n${from}-source-${handle}`, target: `n${to}`, targetHandle: `n${to}-target-left`, status: 'waiting' });
  for (let i = 0; i < size; i++) {
    nodes.push({ nodeId: `n${i}`, flowNodeType: i === size - 1 ? 'gate' : 'step', name: `n${i}`, inputs: [], outputs: [{ id: 'out', key: 'out', valueType: 'string' }], isEntry: i === 0 });
    if (i > 0) link(i - 1, i);
    if (i >= 2 && i % 3 === 0) link(i - 2, i, 'join');
  }
  if (size > 3) link(size - 1, Math.floor(size / 2), 'again');
  return { nodes, edges };
}

/** A step answers at once; the gate takes the loop back once per run, then ends. */
function runners() {
  let looped = false;
  return {
    step: async () => ({ outputs: { out: 'v' } }),
    gate: async ({ node }) => {
      const skipHandleIds = looped ? [`${node.nodeId}-source-again`] : [];
      looped = true;
      return { outputs: { out: 'v' }, skipHandleIds };
    },
  };
}

async function perRun(dispatchWorkflow, size) {
  const once = async () => {
    const { nodes, edges } = graph(size);
    await dispatchWorkflow({ nodes, edges, variables: {}, histories: [], query: [], runners: runners(), mode: 'chat', newId: () => 'id' });
  };
  for (let i = 0; i < 50; i++) await once();
  const runs = Math.max(20, Math.round(20_000 / size));
  const started = performance.now();
  for (let i = 0; i < runs; i++) await once();
  return ((performance.now() - started) / runs) * 1000;
}

execSync('npx tsc -p tsconfig.build.json', { stdio: 'inherit' });
const loaded = [];
for (const [name, dir] of builds) {
  const module = await import(pathToFileURL(resolve(dir, 'domain/workflow/dispatch.js')).href);
  loaded.push([name, module.dispatchWorkflow]);
}
const samples = new Map();
for (let round = 0; round < rounds; round++) {
  for (const [name, dispatchWorkflow] of loaded) {
    for (const size of SIZES) {
      const key = `${name}\t${size}`;
      samples.set(key, [...(samples.get(key) ?? []), await perRun(dispatchWorkflow, size)]);
    }
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const rows = [...samples].map(([key, values]) => {
  const [build, size] = key.split('\t');
  return { build, nodes: Number(size), 'median µs per run': Math.round(median(values)), 'µs per node': (median(values) / Number(size)).toFixed(1) };
});
console.table(rows);
