/**
 * The `teamSpace` credential (teamId + teamToken). The reference validates the token with its
 * commercial service; we POST `{teamId, teamToken}` to TEAM_TOKEN_AUTH_URL and expect
 * `{success:true, data:{uid}}`. Without that setting team-space credentials are refused.
 */
import type { FastifyRequest } from 'fastify';
import { Errors } from '../../infra/errors.js';
import { requireHexId } from '../../infra/mongo.js';
import type { AuthContext } from '../auth/types.js';
import { mergedInput } from '../define-route.js';
import type { ChatModule } from './chat-module.js';

type CheckerAnswer = { success?: unknown; message?: unknown; data?: { uid?: unknown } };

/** The checker's JSON body, or null when it is not a JSON object. */
function answerOf(text: string): CheckerAnswer | null {
  try {
    const body = JSON.parse(text) as unknown;
    return body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as CheckerAnswer) : null;
  } catch {
    return null;
  }
}

export function createTeamSpaceResolver(chat: ChatModule, options: { authUrl?: string; findOwnerTmbId: (teamId: string) => Promise<string | null> }) {
  return async function resolveTeamSpace(request: FastifyRequest): Promise<AuthContext | null> {
    const { teamId, teamToken } = mergedInput(request);
    if (typeof teamToken !== 'string' || teamToken === '') return null;
    const team = requireHexId(teamId, 'teamId');
    if (!options.authUrl) throw Errors.teamTokenRefused('Team-space access is not configured on this server (TEAM_TOKEN_AUTH_URL)');
    let response: Awaited<ReturnType<ChatModule['outbound']>>;
    try {
      // The operator's own service (often internal): private addresses allowed, as for the
      // sandbox; no redirects, so the checker cannot send the token on elsewhere.
      response = await chat.outbound(options.authUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ teamId: team, teamToken }),
        allowPrivate: true,
        maxRedirects: 0,
      });
    } catch (error) {
      // The error names the checker's address: for the operator's log, not for the visitor.
      request.log.warn({ err: error }, 'the team-token checker (TEAM_TOKEN_AUTH_URL) could not be reached');
      throw Errors.teamTokenRefused('The team token could not be checked');
    }
    const answer = answerOf(response.text());
    // An explicit refusal carries the checker's own message, whatever its status.
    if (answer?.success === false) throw Errors.teamTokenRefused(typeof answer.message === 'string' && answer.message ? answer.message : 'The team token was refused');
    if (response.status < 200 || response.status > 299 || answer?.success !== true) {
      request.log.warn({ status: response.status }, 'the team-token checker (TEAM_TOKEN_AUTH_URL) gave no usable answer');
      throw Errors.teamTokenRefused('The team token could not be checked');
    }
    const uid = answer.data?.uid;
    if (typeof uid !== 'string' || uid === '') throw Errors.teamTokenRefused('The team token check returned no uid');
    const ownerTmbId = await options.findOwnerTmbId(team.toLowerCase());
    const member = ownerTmbId ? await chat.memberContext(ownerTmbId) : null;
    if (!member) throw Errors.teamTokenRefused(`Team ${team} not found`);
    return Object.assign({}, member, { authType: 'teamDomain' as const, outLink: { shareId: '', outLinkUid: uid } });
  };
}
