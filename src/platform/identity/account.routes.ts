import type { FastifyInstance } from 'fastify';
import { Errors } from '../../infra/errors.js';
import { definePlatformRoute } from '../define-route.js';
import { SESSION_COOKIE, sessionCookieOptions } from '../../infra/session-cookie.js';
import { accountUpdateSchema, loginSchema, passwordChangeSchema, teamUpdateSchema } from './account.schema.js';
import { SESSION_TTL_SECONDS } from './session-token.js';
import { teamPermissionAllows } from './team-permission.js';

const tags = ['users and teams'];

/** Login, session, account and team endpoints under /support/user. */
export async function accountRoutes(app: FastifyInstance): Promise<void> {
  const { sessions, accounts, users, teams } = app.identity;
  // Clients may send passwords in the query string (GET forms); request lines, which carry it,
  // are logged at info, so these routes log only warnings and errors.
  app.addHook('onRoute', (route) => {
    if (/\/(loginByPassword|updatePasswordByOld)$/.test(route.url)) route.logLevel = 'warn';
  });

  definePlatformRoute(app, {
    methods: ['POST', 'GET'],
    url: '/support/user/account/loginByPassword',
    auth: [],
    input: loginSchema,
    summary: 'Log in with username and password; sets the fastgpt_token cookie and returns the user and token',
    tags,
    handler: async ({ input, request, reply }) => {
      const result = await sessions.login({ ...input, ip: request.ip });
      reply.setCookie(SESSION_COOKIE, result.token, sessionCookieOptions(request, app.config.COOKIE_SECURE, SESSION_TTL_SECONDS));
      return result;
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/support/user/account/loginout',
    auth: [],
    summary: 'Log out: ends the current session (its token is refused afterwards) and clears the cookie',
    tags,
    handler: async ({ request, reply }) => {
      // The token's signature is enough: a disabled user or a removed member still ends the
      // session, which would otherwise come back with the account. A database failure is a 503.
      await sessions.logout(app.platformAuth.sessionIdOf(request) ?? undefined);
      reply.clearCookie(SESSION_COOKIE, sessionCookieOptions(request, app.config.COOKIE_SECURE));
      return null;
    },
  });

  definePlatformRoute(app, {
    methods: ['GET', 'POST'],
    url: '/support/user/account/tokenLogin',
    auth: ['session'],
    summary: 'The current user, team and team permission',
    tags,
    handler: async ({ auth }) => {
      const resolved = await accounts.resolveMember(auth.tmbId, auth.userId);
      if (!resolved) throw Errors.unAuthorization('The team membership of this session no longer exists');
      return sessions.detailOf(resolved);
    },
  });

  definePlatformRoute(app, {
    methods: ['PUT', 'POST'],
    url: '/support/user/account/update',
    auth: ['session'],
    input: accountUpdateSchema,
    summary: 'Update avatar, timezone or OpenAI account; fields not sent are left unchanged',
    tags,
    handler: async ({ input, auth }) => {
      const openaiAccount = input.openaiAccount === undefined ? undefined : input.openaiAccount?.key ? { key: input.openaiAccount.key, baseUrl: input.openaiAccount.baseUrl || app.config.OPENAI_BASE_URL || 'https://api.openai.com/v1' } : null;
      await users.updateProfile(auth.userId, { avatar: input.avatar, timezone: input.timezone, openaiAccount });
      return {};
    },
  });

  definePlatformRoute(app, {
    methods: ['POST', 'GET', 'PUT'],
    url: '/support/user/account/updatePasswordByOld',
    auth: ['session'],
    input: passwordChangeSchema,
    summary: "Change the password (checks the old one); the user's other sessions end",
    tags,
    handler: async ({ input, auth }) => sessions.changePassword({ userId: auth.userId, sessionId: auth.sessionId, oldPsw: input.oldPsw, newPsw: input.newPsw }),
  });

  definePlatformRoute(app, {
    methods: ['PUT', 'GET', 'POST'],
    url: '/support/user/team/update',
    auth: ['session'],
    input: teamUpdateSchema,
    summary: "Update the current team's name, avatar, domain or laf account (team owner or manager)",
    tags,
    handler: async ({ input, auth }) => {
      if (!teamPermissionAllows(auth.teamPermission, 'manage')) throw Errors.unAuthTeam('Only the team owner or a manager can update the team');
      await teams.updateTeam(auth.teamId, input);
      return null;
    },
  });
}
