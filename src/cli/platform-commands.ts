import { ensureIndexes } from '../infra/mongo.js';
import type { TeamRole } from '../platform/auth/types.js';
import { createAccountsService } from '../platform/identity/accounts.service.js';
import { createCredentialEpoch } from '../platform/identity/credential-epoch.js';
import { createSessionsRepo, SESSION_INDEXES } from '../platform/identity/sessions.repo.js';
import { createTeamsRepo, TEAM_INDEXES } from '../platform/identity/teams.repo.js';
import { createUsersRepo, USER_INDEXES } from '../platform/identity/users.repo.js';
import { type CliContext, parseOptions } from './context.js';

const ROLES: readonly TeamRole[] = ['owner', 'admin', 'member'];
const PERMISSIONS = ['4', '6', '7'];

const USAGE = `usage:
  user create --username NAME --password PW [--team TEAM_ID [--role owner|admin|member] [--permission 4|6|7]]
  team add-member --team TEAM_ID --username NAME --role owner|admin|member [--permission 4|6|7]
  user reset-password --username NAME --password PW`;

function required(options: Record<string, string>, name: string): string {
  const value = options[name];
  if (!value) throw new Error(`missing --${name}\n${USAGE}`);
  return value;
}

function role(value: string | undefined): TeamRole | undefined {
  if (value === undefined) return undefined;
  if (!ROLES.includes(value as TeamRole)) throw new Error(`--role must be one of ${ROLES.join(', ')}`);
  return value as TeamRole;
}

function permission(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!PERMISSIONS.includes(value)) throw new Error(`--permission must be one of ${PERMISSIONS.join(', ')}`);
  return Number(value);
}

function allowOnly(options: Record<string, string>, allowed: string[]): void {
  const unknown = Object.keys(options).filter((name) => !allowed.includes(name));
  if (unknown.length > 0) throw new Error(`unknown option --${unknown[0]}\n${USAGE}`);
}

/** `user create`, `user reset-password`, `team add-member` (the same service the API uses). */
export async function runPlatformCommand(args: string[], context: CliContext): Promise<unknown> {
  const [group, command, ...rest] = args;
  const { positional, options } = parseOptions(rest);
  if (positional.length > 0) throw new Error(`unexpected argument '${positional[0]}'\n${USAGE}`);
  await ensureIndexes(context.db, [...USER_INDEXES, ...TEAM_INDEXES, ...SESSION_INDEXES]);
  // Revoking writes (reset-password, a changed member) bump the epoch the servers check.
  const epoch = createCredentialEpoch(context.db);
  const accounts = createAccountsService({ users: createUsersRepo(context.db, epoch), teams: createTeamsRepo(context.db, epoch), sessions: createSessionsRepo(context.db, epoch) });
  const verb = `${group} ${command}`;
  if (verb === 'user create') {
    allowOnly(options, ['username', 'password', 'team', 'role', 'permission']);
    if (!options.team && (options.role || options.permission)) throw new Error('--role and --permission need --team');
    return accounts.createUser({
      username: required(options, 'username'),
      password: required(options, 'password'),
      teamId: options.team,
      role: role(options.role),
      permission: permission(options.permission),
    });
  }
  if (verb === 'team add-member') {
    allowOnly(options, ['team', 'username', 'role', 'permission']);
    return accounts.addMember({
      teamId: required(options, 'team'),
      username: required(options, 'username'),
      role: role(required(options, 'role')) as TeamRole,
      permission: permission(options.permission),
    });
  }
  if (verb === 'user reset-password') {
    allowOnly(options, ['username', 'password']);
    return accounts.resetPassword({ username: required(options, 'username'), password: required(options, 'password') });
  }
  throw new Error(`unknown command '${args.join(' ')}'\n${USAGE}`);
}
