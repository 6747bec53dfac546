import type { Db } from 'mongodb';
import { withFollowUp } from '../../infra/follow-up.js';
import { createLeasedRead } from '../../infra/leased-read.js';
import { CREDENTIALS_STAMP, createRevocationLinksRepo } from './revocation-links.repo.js';

/**
 * The deployment-wide credential epoch is a chain of revocation links in the version stamps
 * collection: link n (`identity:credentials@n`) records what the n-th revoking write revoked.
 * Links are only ever inserted, and a link's `_id` is unique, so two revocations racing for the
 * same place cannot both land there: one takes the next place (on MongoDB and FerretDB alike,
 * where a conditional update of one stamp document could lose one of two concurrent writes).
 *
 * A process knows the chain's end; checking for a revocation is one `_id` read of the link after
 * it (none inside the lease). A link names the credentials' subjects it revoked (a session, a
 * user), so caches drop only the entries of those subjects; a link naming none revokes all.
 * One user logging out or changing time zone in a loop therefore no longer empties every
 * replica's caches.
 *
 * A process starting, or one that has not looked for a while (links past its end may have been
 * pruned), starts from the highest link stored. A revocation is never written into a place whose
 * predecessor is gone. `identity:credentials` itself is still rewritten on each revocation, for
 * replicas of the previous version, which read it as their epoch stamp.
 */
/** Whether a version stamp `_id` belongs to the credential epoch (the previous version's stamp or one of its links). */
export const isCredentialEpochKey = (key: string | undefined): boolean => key === CREDENTIALS_STAMP || (key?.startsWith(`${CREDENTIALS_STAMP}@`) ?? false);

/**
 * How long a process trusts the end it has found, and so how long every revoking write waits
 * after writing its link. The server and the CLI must use the same value: a writer waits out the
 * lease of every reader.
 */
export const CREDENTIALS_LEASE_MS = 100;

/** A process that has not looked at the chain for this long (either clock) starts again from the highest link stored. */
export const CREDENTIALS_RESYNC_MS = 30_000;

/**
 * Links are pruned once older than this and not among the last LINKS_KEPT stored. A
 * process that checked within CREDENTIALS_RESYNC_MS needs only links written since, so this
 * margin is what the deployment's clocks may disagree by.
 */
export const REVOCATION_LINK_RETENTION_MS = 10 * 60_000;
const LINKS_KEPT = 64;
/** Links read side by side once the chain is found to have moved. */
const LINKS_READ_AT_ONCE = 8;
/** Links a cache asks about at most in one step; past it, it starts afresh (drops all). */
const SCOPED_SPAN_MAX = 512;
/** Links remembered (they never change): those a process's caches may still ask about. */
const LINKS_REMEMBERED = 1_024;

/** What a revocation names: the cached credentials holding one of these subjects are dropped. */
export const credentialSubject = {
  session: (id: string) => `session:${id}`,
  user: (id: string) => `user:${id}`,
  member: (id: string) => `member:${id}`,
  team: (id: string) => `team:${id}`,
  apiKey: (id: string) => `apikey:${id}`,
};

/**
 * The deployment-wide credential epoch: processes cache resolved credentials while it is
 * unchanged, and every write that revokes or changes a credential (logout, member removal,
 * key deletion, ...) moves it.
 */
export interface CredentialEpoch {
  /** The current epoch (one small read, none inside the lease). */
  current(): Promise<string>;
  /**
   * The subjects revoked after epoch `from` up to `to` (both answered by `current`), or null when
   * not known (a revocation of everything, links pruned, too many): then everything goes.
   */
  revokedBetween(from: string, to: string): Promise<ReadonlySet<string> | null>;
  /**
   * Moves the epoch after a revoking write; resolves once no process trusts what came before.
   * `subjects`: what it revoked (credentialSubject), so caches keep everything else; none: all.
   */
  revoked(subjects?: readonly string[]): Promise<void>;
  /** Deletes links no process needs any more (a periodic task); answers how many. */
  prune(now: Date): Promise<number>;
}

export interface CredentialEpochOptions {
  leaseMs?: number;
  now?: () => number;
  monotonic?: () => number;
}

export function createCredentialEpoch(db: Db, options: CredentialEpochOptions = {}): CredentialEpoch {
  const stored = createRevocationLinksRepo(db);
  const leaseMs = options.leaseMs ?? CREDENTIALS_LEASE_MS;
  const now = options.now ?? (() => Date.now());
  const monotonic = options.monotonic ?? (() => performance.now());
  /** Links read or written, by place: their subjects (null: everything). They never change. */
  const links = new Map<number, readonly string[] | null>();
  /**
   * The chain's end as this process last found it, when (both clocks: a host suspended and resumed
   * stops the monotonic one, not the wall clock), and until when that is trusted.
   */
  let end: number | undefined;
  let checkedAt = Number.NEGATIVE_INFINITY;
  let checkedAtWall = Number.NEGATIVE_INFINITY;
  let leaseUntil = Number.NEGATIVE_INFINITY;

  function remember(seq: number, subjects: readonly string[] | null): void {
    links.set(seq, subjects);
    if (links.size > LINKS_REMEMBERED) {
      const oldest = Math.max(...links.keys()) - LINKS_REMEMBERED / 2;
      for (const known of links.keys()) if (known < oldest) links.delete(known);
    }
  }

  /** Link `seq`'s subjects, or undefined when there is no such link (yet, or any more). */
  async function readLink(seq: number): Promise<readonly string[] | null | undefined> {
    if (links.has(seq)) return links.get(seq);
    const subjects = await stored.find(seq);
    if (subjects !== undefined) remember(seq, subjects);
    return subjects;
  }

  /** Reads the links of these places not read yet, in one command. */
  async function readLinks(places: number[]): Promise<void> {
    const unknown = places.filter((seq) => !links.has(seq));
    if (unknown.length === 0) return;
    for (const link of await stored.findMany(unknown)) remember(link.seq, link.subjects);
  }

  /** The end of the chain from `start` (a link that exists, or 0). The common case: one read finds no next link. */
  async function walkFrom(start: number): Promise<number> {
    if ((await readLink(start + 1)) === undefined) return start;
    let seq = start + 1;
    for (;;) {
      const places = Array.from({ length: LINKS_READ_AT_ONCE }, (_, index) => seq + 1 + index);
      const found = await Promise.all(places.map(readLink));
      const missing = found.indexOf(undefined);
      if (missing === -1) seq += LINKS_READ_AT_ONCE;
      else return seq + missing;
    }
  }

  /** This process's end if it looked at the chain lately (both clocks), else undefined: links past an end not checked for long may be pruned. */
  const endCheckedLately = (at: number): number | undefined =>
    end !== undefined && at - checkedAt <= CREDENTIALS_RESYNC_MS && now() - checkedAtWall <= CREDENTIALS_RESYNC_MS && now() >= checkedAtWall ? end : undefined;

  /**
   * Where to walk from when this process has not looked lately: still its end when that link is
   * stored (pruning goes from the lowest places, so every link past it is there too: one `_id`
   * read), else the highest link stored (a sort, when the stamp says links were written).
   */
  async function startAgain(): Promise<number> {
    if (end !== undefined && end > 0 && (await stored.exists(end))) return end;
    // No revocation ever written (by this version or the previous) leaves no stamp: nothing to look for.
    if (!(await stored.anyWritten())) return 0;
    return stored.highest();
  }

  async function check(started: number): Promise<number> {
    const startedWall = now();
    const lately = endCheckedLately(started);
    const found = await walkFrom(lately ?? (await startAgain()));
    // Started again, the stored chain is the truth, even behind what this process knew (links
    // deleted by hand): its caches then drop everything (revokedBetween answers null).
    end = lately === undefined ? found : Math.max(end ?? 0, found);
    checkedAt = Math.max(checkedAt, started);
    checkedAtWall = startedWall;
    leaseUntil = Math.max(leaseUntil, started + leaseMs);
    return end;
  }

  // A single key, the chain's end: its lease runs to the latest a check granted (leaseUntil); a revocation ends it.
  const readEnd = createLeasedRead<number>({
    leaseMs,
    monotonic,
    leases: { valueAt: (_key, at) => (end !== undefined && at < leaseUntil ? end : undefined) },
    read: (_key, started) => check(started),
  });

  return {
    async current() {
      return String(await readEnd(CREDENTIALS_STAMP));
    },

    async revokedBetween(from, to) {
      const first = Number(from);
      const last = Number(to);
      if (!Number.isSafeInteger(first) || !Number.isSafeInteger(last) || last < first || last - first > SCOPED_SPAN_MAX) return null;
      const places = Array.from({ length: last - first }, (_, index) => first + 1 + index);
      await readLinks(places);
      const subjects = new Set<string>();
      for (const seq of places) {
        const revoked = links.get(seq);
        if (!revoked) return null;
        for (const subject of revoked) subjects.add(subject);
      }
      return subjects;
    },

    async revoked(subjects) {
      const at = new Date(now());
      let seq = await walkFrom(endCheckedLately(monotonic()) ?? (await startAgain()));
      // Never into a pruned place: after it, processes watching the true end would not see the link.
      if (seq > 0 && (await readLink(seq)) === undefined) seq = await walkFrom(await stored.highest());
      const named = subjects && subjects.length > 0 ? [...subjects] : null;
      // Another revocation took the place: walk to the new end and take the next one.
      while (!(await stored.insert(seq + 1, named, at))) seq = await walkFrom(seq + 1);
      seq += 1;
      remember(seq, named);
      end = Math.max(end ?? 0, seq);
      // Its own link is known; others written meanwhile are looked for at the next read.
      leaseUntil = Number.NEGATIVE_INFINITY;
      // Read by replicas of the previous version only (a version stamp there): its change tells them.
      await stored.writeLegacyStamp(seq, at);
      if (leaseMs > 0) await new Promise((resolve) => setTimeout(resolve, leaseMs));
    },

    async prune(at) {
      const highest = await stored.highest();
      if (highest <= LINKS_KEPT) return 0;
      return stored.prune(highest - LINKS_KEPT, new Date(at.getTime() - REVOCATION_LINK_RETENTION_MS));
    },
  };
}

/** What repositories need: they move the epoch after a write that changed a credential. */
export type CredentialRevocations = Pick<CredentialEpoch, 'revoked'>;

/**
 * A revoking write, then the epoch's move (infra/follow-up.ts: also after a failed write, which
 * may have landed). `subjects`: what the write revoked; none revokes every cached credential.
 */
export function revoking<T>(revocations: CredentialRevocations, write: () => Promise<T>, changed: (result: T) => boolean, subjects?: readonly string[]): Promise<T> {
  return withFollowUp(write, () => revocations.revoked(subjects), changed);
}

/**
 * For `revoking` when the caller revokes explicitly (logout, a password change, a key's delete):
 * the epoch moves even when another request already deleted the credential and has not moved it yet.
 */
export const always = (): boolean => true;
