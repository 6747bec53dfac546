import type { Db } from 'mongodb';
import { createVersionStamps, type VersionStamps } from '../infra/version-stamps.js';

/**
 * The cluster module's version stamps (see src/infra/version-stamps.ts): every process caches
 * resolved credentials and the node index while these are unchanged, and every write that must
 * reach other processes bumps them.
 */
export const CLUSTER_STAMPS = {
  /** Revocations: tokens deleted (logout, password reset, single-login), accounts disabled or enabled. */
  accounts: 'cluster:accounts',
  /** Node and pod writes (imports, host registration): the node index and its views. */
  nodes: 'cluster:nodes',
} as const;

/**
 * How long a process trusts a stamp it read. A revoking or node write waits this long before it
 * answers, so the next request on any process sees it; a busy process reads each stamp at most
 * four times a second.
 */
export const CLUSTER_STAMP_LEASE_MS = 250;

export function createClusterStamps(db: Db): VersionStamps {
  return createVersionStamps(db, { leaseMs: CLUSTER_STAMP_LEASE_MS });
}
