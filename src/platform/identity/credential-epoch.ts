import type { Db } from 'mongodb';
import { bumpAfterWrite, createVersionStamps } from '../../infra/version-stamps.js';

/** The version stamp every process checks before trusting a credential it resolved earlier. */
export const CREDENTIALS_STAMP = 'identity:credentials';

/**
 * How long a process trusts the epoch it has read, and so how long every revoking write waits
 * after bumping it. The server and the CLI must use the same value: a writer waits out the
 * lease of every reader.
 */
export const CREDENTIALS_LEASE_MS = 100;

/**
 * The deployment-wide credential epoch: processes cache resolved credentials while it is
 * unchanged, and every write that revokes or changes a credential (logout, member removal,
 * key deletion, ...) bumps it.
 */
export interface CredentialEpoch {
  /** The current epoch (one small read, none inside the lease). */
  current(): Promise<string>;
  /** Bumps the epoch after a revoking write; resolves once no process trusts what came before. */
  revoked(): Promise<void>;
}

export function createCredentialEpoch(db: Db, leaseMs = CREDENTIALS_LEASE_MS): CredentialEpoch {
  const stamps = createVersionStamps(db, { leaseMs });
  return {
    current: () => stamps.read(CREDENTIALS_STAMP),
    revoked: () => stamps.bump(CREDENTIALS_STAMP),
  };
}

/** What repositories need: they bump the epoch after a write that changed a credential. */
export type CredentialRevocations = Pick<CredentialEpoch, 'revoked'>;

/** A revoking write, then the epoch bump (infra/version-stamps.ts bumpAfterWrite: also after a failed write). */
export function revoking<T>(revocations: CredentialRevocations, write: () => Promise<T>, changed: (result: T) => boolean): Promise<T> {
  return bumpAfterWrite(write, () => revocations.revoked(), changed);
}

/**
 * For `revoking` when the caller revokes explicitly (logout, a password change, a key's delete):
 * the epoch moves even when another request already deleted the credential and has not bumped yet.
 */
export const always = (): boolean => true;
