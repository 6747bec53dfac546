import type { Collection, Document, Filter, Sort, WithId } from 'mongodb';

/**
 * One page of a query and how many documents the query matches. FerretDB has no `$facet`, so the
 * count is a second command; it is sent only when the page cannot tell: without paging the page
 * is every match, and a page shorter than its limit holds the last matches (total = skip + found,
 * whatever the order), unless it is empty past the start (the matches may end before `skip`).
 */
export async function findPage<T extends Document>(
  col: Collection<T>,
  query: Filter<T>,
  sort: Sort,
  page?: { skip: number; limit: number },
): Promise<{ docs: WithId<T>[]; total: number }> {
  let cursor = col.find(query).sort(sort);
  if (page) cursor = cursor.skip(page.skip).limit(page.limit);
  const docs = await cursor.toArray();
  if (!page) return { docs, total: docs.length };
  // A limit of 0 is no limit to MongoDB: the count is asked then.
  const lastPage = page.limit > 0 && docs.length < page.limit && (docs.length > 0 || page.skip === 0);
  return { docs, total: lastPage ? page.skip + docs.length : await col.countDocuments(query) };
}
