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
 * Every request that calls a model outside a chat turn (embeddings, search, data writes, question
 * guide, speech, transcription) records its usage through this one function, and the points count
 * against the API key it came with at once, so a key's point limit holds for all of them. A share
 * link's points are counted by the chat module (turns) and the OpenAI-style routes, which know links.
 */
export function createUsageCharger(deps: { usage: UsageRepo; auth: Pick<PlatformAuthenticator, 'addApiKeyUsage'>; now: () => number }): ChargeUsage {
  return async (caller, usage) => {
    const points = deps.usage.record({ teamId: caller.teamId, tmbId: caller.tmbId, source: usageSourceOfCaller(caller), ...usage }, new Date(deps.now()));
    if (caller.apiKeyId && points > 0) await deps.auth.addApiKeyUsage(caller.apiKeyId, points);
    return points;
  };
}
