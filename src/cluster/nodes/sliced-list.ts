import { compileResponseSerializer } from '../../infra/response-serializer.js';
import type { KubeNode } from './node-document.js';
import { listedNode } from './nodes.schema.js';

/**
 * A list answer of many nodes, built as the route's serializer would write it but a slice of
 * nodes at a time, handing the event loop back between slices: at 10,000 nodes of ~2.5 KB,
 * rendering and serialising in one go held the loop for over a second (a fresh label selector
 * per request defeats the answer memo, so any account could repeat it).
 */

/** Nodes rendered and serialised between two yields (~100 µs each the first time, far less once kept). */
export const NODES_PER_SLICE = 200;

/** Slices' text copied into the answer's buffer between two yields (~1 MB of 2.5 KB nodes). */
const SLICES_PER_WRITE = 2;

/** One listed node as the list's compiled serializer writes an item (same schema, same writer). */
export const serialiseListedNode = compileResponseSerializer(listedNode) as (node: KubeNode) => string;

/** Lets timers and other requests run; `setImmediate` goes after pending I/O callbacks. */
export const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * `{"items":[...],"totalItems":n}` with `itemJson(i)` as item i, in UTF-8, slice by slice. The
 * envelope is the one fast-json-stringify writes for the list schema (items, then totalItems).
 */
export async function serialiseListInSlices(count: number, totalItems: number, itemJson: (index: number) => string, slice = NODES_PER_SLICE): Promise<Buffer> {
  const texts: string[] = ['{"items":['];
  let bytes = Buffer.byteLength(texts[0] as string);
  for (let start = 0; start < count; start += slice) {
    if (start > 0) await yieldToLoop();
    const parts: string[] = [];
    for (let index = start; index < Math.min(count, start + slice); index++) parts.push(itemJson(index));
    const text = start > 0 ? `,${parts.join(',')}` : parts.join(',');
    texts.push(text);
    bytes += Buffer.byteLength(text);
  }
  texts.push(`],"totalItems":${totalItems}}`);
  bytes += Buffer.byteLength(texts.at(-1) as string);
  // One allocation written slice by slice: a buffer per slice and their concatenation doubled
  // the memory outside the heap, which brings on full garbage collections.
  const out = Buffer.allocUnsafe(bytes);
  let offset = 0;
  for (let index = 0; index < texts.length; index++) {
    if (index > 0 && index % SLICES_PER_WRITE === 0) await yieldToLoop();
    offset += out.write(texts[index] as string, offset);
  }
  return out;
}
