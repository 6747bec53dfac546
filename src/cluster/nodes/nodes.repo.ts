import type { Db, Filter } from 'mongodb';
import { type IndexDeclaration, isDuplicateKeyError, upsertMany } from '../../infra/mongo.js';
import type { StoredNode } from './node-document.js';
import type { MongoFilter } from './node-query.js';

const NODES = 'cluster_nodes';

export const NODE_INDEXES: readonly IndexDeclaration[] = [
  { collection: NODES, key: { creationTimestamp: -1, _id: -1 }, options: { name: 'created_name' } },
  { collection: NODES, key: { uid: 1 }, options: { name: 'uid', unique: true } },
  { collection: NODES, key: { status: 1 }, options: { name: 'status' } },
  { collection: NODES, key: { labelPairs: 1 }, options: { name: 'label_pairs' } },
  { collection: NODES, key: { labelKeys: 1 }, options: { name: 'label_keys' } },
];

export type NodeCandidate = Pick<StoredNode, '_id' | 'labelPairs' | 'annotationPairs'>;

/** What the in-process node index keeps per node: the filter and sort fields and the object's JSON. */
export type NodeIndexEntry = Omit<StoredNode, 'updatedAt'>;

export function createNodesRepo(db: Db) {
  const nodes = db.collection<StoredNode>(NODES);
  const asFilter = (filter: MongoFilter) => filter as Filter<StoredNode>;
  return {
    /** Every node, for the in-process index (one read of the collection). */
    loadIndexEntries: () => nodes.find({}, { projection: { updatedAt: 0 } }).toArray() as Promise<NodeIndexEntry[]>,

    count: (filter: MongoFilter) => nodes.countDocuments(asFilter(filter)),

    /** One page of stored JSON, sorted and windowed in the database. */
    async findPage(filter: MongoFilter, sort: Record<string, 1 | -1>, skip: number, limit: number | null) {
      let cursor = nodes.find(asFilter(filter), { projection: { json: 1 } }).sort(sort);
      if (skip > 0) cursor = cursor.skip(skip);
      if (limit !== null) cursor = cursor.limit(limit);
      return (await cursor.toArray()) as Pick<StoredNode, '_id' | 'json'>[];
    },

    /** Names and pairs only, for filters evaluated in code; the JSON is fetched per page. */
    findCandidates: (filter: MongoFilter, sort: Record<string, 1 | -1>) =>
      nodes.find(asFilter(filter), { projection: { labelPairs: 1, annotationPairs: 1 } }).sort(sort).toArray() as Promise<NodeCandidate[]>,

    /** The JSON of these nodes (one read). */
    async findJsonByNames(names: string[]): Promise<Map<string, string>> {
      const found = await nodes.find({ _id: { $in: names } }, { projection: { json: 1 } }).toArray();
      return new Map(found.map((node) => [node._id, node.json]));
    },

    findByName: (name: string) => nodes.findOne({ _id: name }, { projection: { json: 1 } }),

    /** Nodes of other names already holding one of these uids (an import would collide). */
    async findUidOwners(uids: string[]): Promise<{ _id: string; uid: string }[]> {
      return nodes.find({ uid: { $in: uids } }, { projection: { uid: 1 } }).toArray();
    },

    /** Inserts the new nodes and replaces the known ones (in chunks; `onWritten` hears the running total). */
    async upsertMany(docs: StoredNode[], onWritten?: (written: number) => void): Promise<{ created: number; updated: number }> {
      if (docs.length === 0) return { created: 0, updated: 0 };
      return upsertMany(nodes, docs, onWritten);
    },

    /** Deletes the stored nodes not named here (an import with --prune); how many went. */
    async deleteAllExcept(names: string[]): Promise<number> {
      return (await nodes.deleteMany({ _id: { $nin: names } })).deletedCount;
    },

    /** Deletes one node; false when none has that name. */
    async deleteByName(name: string): Promise<boolean> {
      return (await nodes.deleteOne({ _id: name })).deletedCount > 0;
    },

    async hasAny(): Promise<boolean> {
      return (await nodes.findOne({}, { projection: { _id: 1 } })) !== null;
    },

    /** Inserts the node unless one of that name or uid exists; true when inserted. */
    async insertIfAbsent(doc: StoredNode): Promise<boolean> {
      try {
        const result = await nodes.updateOne({ _id: doc._id }, { $setOnInsert: doc }, { upsert: true });
        return result.upsertedCount > 0;
      } catch (error) {
        if (isDuplicateKeyError(error)) return false;
        throw error;
      }
    },
  };
}

export type NodesRepo = ReturnType<typeof createNodesRepo>;
