/**
 * The `teamSpace` credential (teamId + teamToken). The reference validates the token with its
 * commercial service; we POST `{teamId, teamToken}` to TEAM_TOKEN_AUTH_URL and expect
 * `{success:true, data:{uid}}`. Without that setting team-space credentials are refused.
 */
import type { FastifyRequest } from 'fastify';
import { Errors, isAppError } from '../../infra/errors.js';
import { requireHexId } from '../../infra/mongo.js';
import type { AuthContext } from '../auth/types.js';
import { mergedInput } from '../define-route.js';
import type { ChatModule } from './chat-module.js';

export function createTeamSpaceResolver(chat: ChatModule, options: { authUrl?: string; findOwnerTmbId: (teamId: string) => Promise<string | null> }) {
  return async function resolveTeamSpace(request: FastifyRequest): Promise<AuthContext | null> {
    const { teamId, teamToken } = mergedInput(request);
    if (typeof teamToken !== 'string' || teamToken === '') return null;
    const team = requireHexId(teamId, 'teamId');
    if (!options.authUrl) throw Errors.teamTokenRefused('Team-space access is not configured on this server (TEAM_TOKEN_AUTH_URL)');
    let uid: unknown;
    try {
      const response = await chat.outbound(options.authUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ teamId: team, teamToken }) });
      const body = JSON.parse(response.text()) as { success?: boolean; message?: string; data?: { uid?: unknown } };
      if (!body.success) throw Errors.teamTokenRefused(body.message || 'The team token was refused');
      uid = body.data?.uid;
    } catch (error) {
      if (isAppError(error)) throw error;
      throw Errors.teamTokenRefused(`The team token could not be checked: ${(error as Error).message}`);
    }
    if (typeof uid !== 'string' || uid === '') throw Errors.teamTokenRefused('The team token check returned no uid');
    const ownerTmbId = await options.findOwnerTmbId(team.toLowerCase());
    const member = ownerTmbId ? await chat.memberContext(ownerTmbId) : null;
    if (!member) throw Errors.teamTokenRefused(`Team ${team} not found`);
    return Object.assign({}, member, { authType: 'teamDomain' as const, outLink: { shareId: '', outLinkUid: uid } });
  };
}
