import type { Db } from 'mongodb';
import { createAccountsService } from '../../src/platform/identity/accounts.service.js';
import { createCredentialEpoch } from '../../src/platform/identity/credential-epoch.js';
import { createSessionsRepo } from '../../src/platform/identity/sessions.repo.js';
import { createTeamsRepo } from '../../src/platform/identity/teams.repo.js';
import { createUsersRepo } from '../../src/platform/identity/users.repo.js';
import type { PlatformCaller } from '../helpers/real-process.js';

export const PASSWORD = 'member-password-1';

/** Adds members to a team through the service the admin CLI uses (team read permission); returns their tmbIds. */
export async function addMembers<N extends string>(db: Db, teamId: string, usernames: N[]): Promise<Record<N, string>> {
  const epoch = createCredentialEpoch(db);
  const accounts = createAccountsService({ users: createUsersRepo(db, epoch), teams: createTeamsRepo(db, epoch), sessions: createSessionsRepo(db, epoch) });
  const out = {} as Record<N, string>;
  for (const username of usernames) {
    out[username] = (await accounts.createUser({ username, password: PASSWORD, teamId, role: 'member', permission: 4 })).tmbId;
  }
  return out;
}

export async function whoAmI(api: PlatformCaller): Promise<{ teamId: string; tmbId: string }> {
  const me = await api.ok<{ team: { teamId: string; tmbId: string } }>('GET', '/support/user/account/tokenLogin');
  return { teamId: me.team.teamId, tmbId: me.team.tmbId };
}

export const workflow = {
  modules: [
    { nodeId: 'workflowStartNodeId', flowNodeType: 'workflowStart', inputs: [], outputs: [] },
    { nodeId: 'chatNode', flowNodeType: 'chatNode', inputs: [{ key: 'userChatInput', value: ['workflowStartNodeId', 'userChatInput'] }], outputs: [] },
  ],
  edges: [{ source: 'workflowStartNodeId', target: 'chatNode', sourceHandle: 'out', targetHandle: 'in' }],
};

export interface Listed {
  _id: string;
  name: string;
}

/** The ids the caller sees in a folder (null: the root). */
export const listedIds = async (api: PlatformCaller, parentId: string | null) => (await api.ok<Listed[]>('POST', '/core/app/list', { parentId })).map((app) => app._id);

/** The caller's permission on an app: the HTTP status of its detail, and write when readable. */
export async function access(api: PlatformCaller, appId: string): Promise<'none' | 'read' | 'write'> {
  const detail = await api.call('GET', `/core/app/detail?appId=${appId}`);
  if (detail.status === 403) return 'none';
  if (detail.status !== 200) throw new Error(`detail ${appId}: ${detail.status} ${detail.text}`);
  return (detail.body.data as { permission: { hasWritePer: boolean } }).permission.hasWritePer ? 'write' : 'read';
}
