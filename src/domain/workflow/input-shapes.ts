/**
 * Node inputs are stored as the editor (or a client) sent them and are checked only for their
 * outer shape: a list a node reads item by item may hold anything. These keep what a node can use.
 */

export type InputRecord = Record<string, unknown>;

export const isRecord = (value: unknown): value is InputRecord => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The objects of a list (none when it is not a list). */
export function recordsOf(value: unknown): InputRecord[] {
  return Array.isArray(value) ? value.filter(isRecord) : [];
}

/** A chat value a node can read: text with its content as text, or any other typed value. */
function isChatValue(value: unknown): boolean {
  if (!isRecord(value) || typeof value.type !== 'string') return false;
  if (value.type === 'text') return isRecord(value.text) && typeof value.text.content === 'string';
  if (value.type === 'file') return isRecord(value.file) && typeof value.file.url === 'string';
  return true;
}

/** Chat items given as a history input: those with a role and a list of readable values. */
export function historyItemsOf(value: unknown): InputRecord[] {
  return recordsOf(value)
    .filter((item) => typeof item.obj === 'string' && Array.isArray(item.value))
    .map((item) => Object.assign({}, item, { value: (item.value as unknown[]).filter(isChatValue) }));
}
