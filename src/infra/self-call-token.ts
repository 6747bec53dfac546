import { createHmac } from 'node:crypto';
import { sameSecret } from './secret-compare.js';

/** The headers a workflow run sends when it calls one of this service's own routes. */
export const SELF_CALL_HEADER = 'x-self-call-token';
export const SELF_CALL_SCOPE_HEADER = 'x-self-call-scope';

/**
 * What a self call may act on: the team its run is for and, for a run that saves a chat, that
 * chat's app, chat and answer item (empty otherwise). A route acting on a chat takes these ids
 * from the proof, never from the body a graph author or a chatTest caller writes.
 */
export interface SelfCallScope {
  teamId: string;
  appId: string;
  chatId: string;
  dataId: string;
}

const encodeScope = (scope: SelfCallScope) => Buffer.from(JSON.stringify([scope.teamId, scope.appId, scope.chatId, scope.dataId])).toString('base64url');

/**
 * Proves that a request comes from this deployment's own workflow runtime, running for `scope`
 * (derived from TOKEN_KEY, so every replica agrees). The source address cannot prove it: behind a
 * reverse proxy every request arrives from loopback.
 */
export function selfCallToken(tokenKey: string, scope: SelfCallScope): string {
  return createHmac('sha256', tokenKey).update(`self-call:${encodeScope(scope)}`).digest('base64url');
}

/** The headers that carry the proof of a run for `scope`. */
export function selfCallHeaders(tokenKey: string, scope: SelfCallScope): Record<string, string> {
  return { [SELF_CALL_HEADER]: selfCallToken(tokenKey, scope), [SELF_CALL_SCOPE_HEADER]: encodeScope(scope) };
}

/** The scope a self call proves; undefined when the request carries no valid proof. */
export function selfCallScope(headers: Record<string, unknown>, tokenKey: string): SelfCallScope | undefined {
  const given = headers[SELF_CALL_HEADER];
  const encoded = headers[SELF_CALL_SCOPE_HEADER];
  if (typeof given !== 'string' || typeof encoded !== 'string' || !encoded) return undefined;
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(fields) || fields.length !== 4 || !fields.every((field) => typeof field === 'string')) return undefined;
  const [teamId, appId, chatId, dataId] = fields as string[];
  const scope = { teamId: teamId!, appId: appId!, chatId: chatId!, dataId: dataId! };
  if (!scope.teamId || !sameSecret(given, selfCallToken(tokenKey, scope))) return undefined;
  return scope;
}
