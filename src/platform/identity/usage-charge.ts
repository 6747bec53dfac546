import type { AuthContext, PlatformAuthenticator } from '../auth/types.js';
import type { UsageLine, UsageRepo, UsageSource } from './usage.repo.js';

/** What a request used, as its route knows it; the caller's team, member and source come from its credential. */
export interface RequestUsage {
  appName: string;
  appId?: string;
  list: UsageLine[];
}

/** Records a request's usage for its caller; answers the points it cost. */
export type ChargeUsage = (caller: AuthContext, usage: RequestUsage) => Promise<number>;

/** The usage source of a caller outside a chat: an API key, a share link, or the web app (sessions, team spaces). */
export function usageSourceOfCaller(caller: AuthContext): UsageSource {
  if (caller.authType === 'apikey') return 'api';
  if (caller.authType === 'outLink') return 'shareLink';
  return 'fastgpt';
}

/**
 * Counts points against the credential a request came with: an API key here; a share link
 * through the sink the share-link module registers (identity does not know links). Chat turns
 * and every call outside them go through it, so each credential's point limit holds for all.
 * A share link is told of free turns too (its last use); a key only of what costs points.
 */
export function createCredentialCharger(deps: { auth: Pick<PlatformAuthenticator, 'addApiKeyUsage'> }) {
  let shareLinkSink: ((shareId: string, points: number) => Promise<void>) | undefined;
  return {
    async charge(caller: AuthContext, points: number): Promise<void> {
      const shareId = caller.authType === 'outLink' ? caller.outLink?.shareId : undefined;
      if (shareId) await shareLinkSink?.(shareId, points);
      else if (caller.apiKeyId && points > 0) await deps.auth.addApiKeyUsage(caller.apiKeyId, points);
    },
    /** The share-link module's: adds a turn's points (and its time) to the link. */
    onShareLinkUsage(sink: (shareId: string, points: number) => Promise<void>): void {
      shareLinkSink = sink;
    },
  };
}

export type CredentialCharger = ReturnType<typeof createCredentialCharger>;

/**
 * Every request that calls a model outside a chat turn (embeddings, search, data writes, question
 * guide, speech, transcription) records its usage through this one function, and the points count
 * against the credential it came with at once (createCredentialCharger).
 * The usage is recorded (the work done and paid for) before the credential is charged, so a failed
 * charge is reported to `onChargeFailure`, never thrown: a 5xx there made OpenAI's SDKs send the
 * request again, each attempt calling the model and recording its usage once more.
 */
export function createUsageCharger(deps: {
  usage: UsageRepo;
  credentials: CredentialCharger;
  now: () => number;
  onChargeFailure: (error: unknown) => void;
}): ChargeUsage {
  return async (caller, usage) => {
    const points = deps.usage.record({ teamId: caller.teamId, tmbId: caller.tmbId, source: usageSourceOfCaller(caller), ...usage }, new Date(deps.now()));
    await deps.credentials.charge(caller, points).catch(deps.onChargeFailure);
    return points;
  };
}
