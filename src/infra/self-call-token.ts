import { createHmac } from 'node:crypto';
import { sameSecret } from './secret-compare.js';

/** The headers a workflow run sends when it calls one of this service's own routes. */
export const SELF_CALL_HEADER = 'x-self-call-token';
export const SELF_CALL_TEAM_HEADER = 'x-self-call-team';

/**
 * Proves that a request comes from this deployment's own workflow runtime, running for `teamId`
 * (derived from TOKEN_KEY, so every replica agrees). The source address cannot prove it: behind a
 * reverse proxy every request arrives from loopback. The team is part of the proof, so a run of
 * one team cannot act on another team's chats through its own routes.
 */
export function selfCallToken(tokenKey: string, teamId: string): string {
  return createHmac('sha256', tokenKey).update(`self-call:${teamId}`).digest('base64url');
}

/** The headers that carry the proof of a run of `teamId`. */
export function selfCallHeaders(tokenKey: string, teamId: string): Record<string, string> {
  return { [SELF_CALL_HEADER]: selfCallToken(tokenKey, teamId), [SELF_CALL_TEAM_HEADER]: teamId };
}

/** The team a self call proves it runs for; undefined when the request carries no valid proof. */
export function selfCallTeam(headers: Record<string, unknown>, tokenKey: string): string | undefined {
  const given = headers[SELF_CALL_HEADER];
  const teamId = headers[SELF_CALL_TEAM_HEADER];
  if (typeof given !== 'string' || typeof teamId !== 'string' || !teamId) return undefined;
  return sameSecret(given, selfCallToken(tokenKey, teamId)) ? teamId : undefined;
}
