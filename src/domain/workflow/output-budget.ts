/**
 * What one turn may produce, in characters: its answers, its run details (flowResponses, which
 * detail answers send and the chat item keeps) and the events it streams besides answer text.
 * Each node's substitution is bounded (interpolate.ts), but loops multiply what nodes produce: a
 * 900,000-character text editor run 200 times made a 179 MB answer from a 0.9 MB request.
 */
/** Twenty times what substitution may add to one node: four HTTP answers at the default 5 MB cap, each shown in its detail. */
export const MAX_TURN_OUTPUT_CHARS = 20_000_000;

/**
 * The characters of `root` as JSON would write them, roughly (strings and keys by length, other
 * values by their text), stopping once past `limit`. Objects in `counted` are skipped and those
 * walked are added to it: a value reported again (a nested run's details, which the node that
 * ran it returns in its own) counts once, and a cycle ends the walk.
 */
function textSize(root: unknown, counted: WeakSet<object>, limit: number): number {
  let size = 0;
  const stack: unknown[] = [root];
  while (stack.length > 0 && size <= limit) {
    const value = stack.pop();
    if (typeof value === 'string') size += value.length + 2;
    else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') size += String(value).length;
    else if (typeof value === 'object' && value !== null) {
      if (counted.has(value)) continue;
      counted.add(value);
      if (ArrayBuffer.isView(value)) size += value.byteLength;
      else if (Array.isArray(value)) {
        size += value.length + 2;
        for (const item of value) stack.push(item);
      } else {
        for (const [key, item] of Object.entries(value)) {
          size += key.length + 4;
          stack.push(item);
        }
      }
    }
  }
  return size;
}

/** One turn's output budget, shared with every run nested in it (see RunBudget). */
export class OutputBudget {
  private left: number;
  private readonly counted = new WeakSet<object>();

  constructor(readonly max = MAX_TURN_OUTPUT_CHARS) {
    this.left = max;
  }

  /** Counts what `value` adds to the turn's output. Never throws: events are counted where a throw would be lost. */
  add(value: unknown): void {
    if (value === undefined || this.left < 0) return;
    this.left -= textSize(value, this.counted, this.left);
  }

  /** Why the turn must stop (it produced more than its budget), or undefined while it is within it. */
  problem(): string | undefined {
    return this.left < 0 ? `the turn produced more than ${this.max} characters of answers and run details (a loop repeating a large output?)` : undefined;
  }
}
