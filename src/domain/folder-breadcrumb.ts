/** A folder-like item as the breadcrumb needs it: apps, datasets and collections all nest this way. */
export interface FolderNode {
  _id: string;
  name: string;
  parentId?: string | null;
}

export interface BreadcrumbStep {
  parentId: string;
  parentName: string;
}

/** Far deeper than any real tree; a bound so damaged data cannot keep a request walking. */
export const MAX_FOLDER_DEPTH = 100;

/**
 * The path from the top folder down to `start` (inclusive), walking parents through `findParent`.
 * The walk stops at a parent that is missing (deleted, or not visible to the caller: `findParent`
 * decides), at a cycle, or after `maxDepth` steps.
 */
export async function folderBreadcrumb(
  start: FolderNode,
  findParent: (id: string) => Promise<FolderNode | null>,
  maxDepth = MAX_FOLDER_DEPTH,
): Promise<BreadcrumbStep[]> {
  const chain = [start];
  const seen = new Set([start._id]);
  let current = start.parentId;
  while (current && !seen.has(current) && chain.length < maxDepth) {
    const parent = await findParent(current);
    if (!parent) break;
    chain.unshift(parent);
    seen.add(current);
    current = parent.parentId;
  }
  return chain.map((item) => ({ parentId: item._id, parentName: item.name }));
}
