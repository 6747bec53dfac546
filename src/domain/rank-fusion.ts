/**
 * Reciprocal rank fusion (as the reference's mixed recall; docs/datasets.md): an item at 1-based rank r of a list contributes
 * 1 / (k + r); items in several lists sum their contributions. Sorted by fused score, ties
 * keep the order in which items were first seen. Duplicate ids inside one list count once
 * (their best rank).
 */
export function reciprocalRankFusion(lists: { id: string }[][], k: number | readonly number[] = 60): { id: string; score: number }[] {
  const scores = new Map<string, number>();
  lists.forEach((list, listIndex) => {
    // One k for all lists, or one per list (the reference weighs its rerank list with 58).
    const listK = typeof k === 'number' ? k : (k[listIndex] ?? 60);
    const seen = new Set<string>();
    list.forEach((item, index) => {
      if (seen.has(item.id)) return;
      seen.add(item.id);
      scores.set(item.id, (scores.get(item.id) ?? 0) + 1 / (listK + index + 1));
    });
  });
  const order = [...scores.keys()];
  return order
    .map((id, position) => ({ id, score: scores.get(id)!, position }))
    .sort((a, b) => b.score - a.score || a.position - b.position)
    .map(({ id, score }) => ({ id, score }));
}

/**
 * Lists of found items merged by reciprocal rank fusion, then kept while their q and a stay within
 * `limit` characters (at least one): the lists of several queries (query extension) or of several
 * searches (the datasetConcat node).
 */
export function mergeByRankFusion<T extends { id: string; q?: unknown; a?: unknown }>(lists: T[][], limit: number): T[] {
  const byId = new Map<string, T>();
  for (const list of lists) for (const item of list) if (!byId.has(item.id)) byId.set(item.id, item);
  const out: T[] = [];
  let used = 0;
  for (const { id } of reciprocalRankFusion(lists)) {
    const item = byId.get(id)!;
    used += `${item.q ?? ''}${item.a ?? ''}`.length;
    if (used > limit && out.length > 0) break;
    out.push(item);
  }
  return out;
}
