import type { VersionStamps } from '../../src/infra/version-stamps.js';
import type { SnapshotPart, StoredChange } from '../../src/platform/datasets/search/index-codec.js';
import type { IndexMeta, IndexStore } from '../../src/platform/datasets/search/index-store.repo.js';

// In-memory stand-ins for the search index's storage, for unit tests of the index's logic (the
// integration tests run the real repositories).

/** The stored index in memory, with the semantics of index-store.repo.ts, shared by "processes". */
export function memoryStore() {
  const meta = new Map<string, IndexMeta & { claimUntil?: number }>();
  const segments = new Map<string, { datasetId: string; parts: SnapshotPart[]; at: Date }>();
  const changes = new Map<string, { datasetId: string; seq: number; at: Date; changes?: StoredChange[] }>();
  const reads = { parts: 0, changesAfter: 0 };
  const store: IndexStore = {
    meta: async (datasetId) => {
      const found = meta.get(datasetId);
      return found ? { snapshot: found.snapshot, seq: found.seq, model: found.model, parts: found.parts } : null;
    },
    head: async (datasetId) => Math.max(meta.get(datasetId)?.seq ?? 0, ...[...changes.values()].filter((c) => c.datasetId === datasetId).map((c) => c.seq)),
    tryAppend: async (datasetId, seq, stored, at) => {
      if (changes.has(`${datasetId}:${seq}`)) return false;
      changes.set(`${datasetId}:${seq}`, { datasetId, seq, at, changes: structuredClone(stored) });
      return true;
    },
    changesAfter: async (datasetId, seq) => {
      reads.changesAfter += 1;
      return [...changes.values()].filter((c) => c.datasetId === datasetId && c.seq > seq).sort((x, y) => x.seq - y.seq).map((c) => ({ seq: c.seq, changes: structuredClone(c.changes) }));
    },
    parts: async (snapshot) => {
      reads.parts += 1;
      return structuredClone(segments.get(snapshot)?.parts ?? []);
    },
    partCount: async (snapshot) => segments.get(snapshot)?.parts.length ?? 0,
    claim: async (datasetId, model, now, until) => {
      const found = meta.get(datasetId);
      if (found && (found.claimUntil ?? 0) >= now.getTime()) return null;
      const current = found ?? { snapshot: null, seq: 0, model, parts: 0 };
      meta.set(datasetId, { ...current, claimUntil: until.getTime() });
      return { snapshot: current.snapshot, seq: current.seq, model: current.model, parts: current.parts };
    },
    writeParts: async (datasetId, snapshot, parts, at = new Date()) => void segments.set(snapshot, { datasetId, parts: structuredClone(parts), at }),
    publish: async (datasetId, previous, next) => {
      const found = meta.get(datasetId);
      const ok = found !== undefined && found.snapshot === previous.snapshot && found.seq === previous.seq;
      meta.set(datasetId, ok ? { ...next } : { ...found!, claimUntil: undefined });
      return ok;
    },
    release: async (datasetId) => {
      const found = meta.get(datasetId);
      if (found) found.claimUntil = undefined;
    },
    deleteSnapshot: async (snapshot) => void segments.delete(snapshot),
    deleteAbandonedSnapshots: async (datasetId, keep, before) => {
      for (const [key, segment] of segments) if (segment.datasetId === datasetId && !keep.includes(key) && segment.at < before) segments.delete(key);
    },
    foldChanges: async (datasetId, seq, before) => {
      for (const [key, change] of changes) {
        if (change.datasetId !== datasetId || change.seq > seq) continue;
        if (change.at < before) changes.delete(key);
        else change.changes = undefined;
      }
    },
    dropDataset: async (datasetId) => {
      for (const [key, change] of changes) if (change.datasetId === datasetId) changes.delete(key);
      for (const [key, segment] of segments) if (segment.datasetId === datasetId) segments.delete(key);
      meta.delete(datasetId);
    },
  };
  return { store, reads, changes, segments };
}

/** Version stamps without a lease: every read sees the last bump. */
export function memoryStamps(): VersionStamps {
  const values = new Map<string, string>();
  let counter = 0;
  return {
    read: async (key) => values.get(key) ?? 'initial',
    bump: async (...keys) => {
      for (const key of keys) values.set(key, `v${++counter}`);
    },
    remove: async (...keys) => {
      for (const key of keys) values.delete(key);
    },
    forget: () => undefined,
  };
}
