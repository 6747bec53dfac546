import type { Collection, Document, ObjectId } from 'mongodb';
import { oid, oids } from '../../infra/plain-record.js';

/**
 * Counts a team's documents per dataset collection (`$group` with `$sum`, which FerretDB
 * supports); shared by the data and training repositories, whose collections both carry
 * `teamId` and `collectionId`.
 */
export async function countPerCollection<T extends Document>(col: Collection<T>, teamId: string, collectionIds: string[]): Promise<Map<string, number>> {
  const rows = await col
    .aggregate<{ _id: ObjectId; n: number }>([
      { $match: { teamId: oid(teamId), collectionId: { $in: oids(collectionIds) } } },
      { $group: { _id: '$collectionId', n: { $sum: 1 } } },
    ])
    .toArray();
  return new Map(rows.map((row) => [row._id.toHexString(), row.n]));
}
