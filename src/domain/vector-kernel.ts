/**
 * The dot-product scan of the vector index as a tiny WebAssembly module using 128-bit SIMD
 * (4 floats per instruction, two accumulators): about 4–5× faster than the same loop in
 * JavaScript (100,000 × 256 in ~5 ms instead of ~25 ms on the development machine). The module
 * is assembled here from its instructions, so no binary or build step is checked in.
 *
 * scores(query, data, rows, pairs, out): for each of `rows` rows of `pairs × 8` floats starting
 * at byte offset `data`, writes the dot product with the query (byte offset `query`, same
 * length) as a float32 at `out`, `out + 4`, ... All offsets are bytes into the memory.
 */
const SIMD = 0xfd;
const I32 = 0x7f;
const V128 = 0x7b;

function uleb(value: number): number[] {
  const out: number[] = [];
  let n = value >>> 0;
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return out;
}

const name = (text: string) => [...uleb(text.length), ...Buffer.from(text, 'utf8')];
const section = (id: number, bytes: number[]) => [id, ...uleb(bytes.length), ...bytes];
const get = (local: number) => [0x20, local];
const set = (local: number) => [0x21, local];
const tee = (local: number) => [0x22, local];
const i32 = (n: number) => [0x41, ...uleb(n)]; // small positive constants only (sleb equals uleb below 64)
const load = (offset: number) => [SIMD, 0x00, 0x04, ...uleb(offset)];
const f32x4Add = [SIMD, 0xe4, 0x01];
const f32x4Mul = [SIMD, 0xe6, 0x01];
const lane = (index: number) => [SIMD, 0x1f, index];
const zero = [SIMD, 0x0c, ...new Array<number>(16).fill(0)];

// Params 0 query, 1 data, 2 rows, 3 pairs, 4 out; locals 5 query cursor, 6 pairs left, 7–8 sums.
const [QUERY, DATA, ROWS, PAIRS, OUT, CURSOR, LEFT, SUM0, SUM1] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
const body = [
  ...[0x02, 0x40, ...get(ROWS), 0x45, 0x0d, 0x00], // block; rows == 0 → done
  ...[0x03, 0x40], // loop over rows
  ...zero, ...set(SUM0), ...zero, ...set(SUM1),
  ...get(QUERY), ...set(CURSOR), ...get(PAIRS), ...set(LEFT),
  ...[0x03, 0x40], // loop over 8-float pairs of lanes
  ...get(SUM0), ...get(DATA), ...load(0), ...get(CURSOR), ...load(0), ...f32x4Mul, ...f32x4Add, ...set(SUM0),
  ...get(SUM1), ...get(DATA), ...load(16), ...get(CURSOR), ...load(16), ...f32x4Mul, ...f32x4Add, ...set(SUM1),
  ...get(DATA), ...i32(32), 0x6a, ...set(DATA),
  ...get(CURSOR), ...i32(32), 0x6a, ...set(CURSOR),
  ...get(LEFT), ...i32(1), 0x6b, ...tee(LEFT), 0x0d, 0x00,
  0x0b,
  ...get(SUM0), ...get(SUM1), ...f32x4Add, ...set(SUM0),
  ...get(OUT),
  ...get(SUM0), ...lane(0), ...get(SUM0), ...lane(1), 0x92, ...get(SUM0), ...lane(2), 0x92, ...get(SUM0), ...lane(3), 0x92,
  ...[0x38, 0x02, 0x00], // f32.store
  ...get(OUT), ...i32(4), 0x6a, ...set(OUT),
  ...get(ROWS), ...i32(1), 0x6b, ...tee(ROWS), 0x0d, 0x00,
  0x0b,
  0x0b,
  0x0b,
];
const code = [...[0x02, 0x02, I32, 0x02, V128], ...body];

const MODULE_BYTES = new Uint8Array([
  ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
  ...section(1, [0x01, 0x60, 0x05, I32, I32, I32, I32, I32, 0x00]),
  ...section(2, [0x01, ...name('env'), ...name('memory'), 0x02, 0x00, 0x01]),
  ...section(3, [0x01, 0x00]),
  ...section(7, [0x01, ...name('scores'), 0x00, 0x00]),
  ...section(10, [0x01, ...uleb(code.length), ...code]),
]);

/** The part of the WebAssembly API used here (the project's TypeScript libs do not declare it). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Memory: new (descriptor: { initial: number }) => WasmMemory;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
}
const wasm = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;

let compiled: object | null | undefined;

/** The compiled module, or null where WebAssembly SIMD is unavailable (callers scan in JS). */
function kernelModule(): object | null {
  if (compiled === undefined) {
    try {
      compiled = wasm ? new wasm.Module(MODULE_BYTES) : null;
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

export const WASM_PAGE_BYTES = 65_536;

export interface ScoreKernel {
  memory: WasmMemory;
  scores(query: number, data: number, rows: number, pairs: number, out: number): void;
}

/** A kernel over its own growable memory of at least `bytes`, or null (no SIMD, no memory). */
export function createScoreKernel(bytes: number): ScoreKernel | null {
  const module = kernelModule();
  if (!module || !wasm) return null;
  try {
    const memory = new wasm.Memory({ initial: Math.max(1, Math.ceil(bytes / WASM_PAGE_BYTES)) });
    const instance = new wasm.Instance(module, { env: { memory } });
    const scores = instance.exports.scores as ScoreKernel['scores'];
    return { memory, scores };
  } catch {
    return null;
  }
}
