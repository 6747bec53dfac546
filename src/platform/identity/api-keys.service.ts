import { Errors } from '../../infra/errors.js';
import { nanoid, randomBelow } from '../../infra/random-string.js';
import type { AuthContext } from '../auth/types.js';
import { type ApiKeyRecord, type ApiKeysRepo, digestApiKey } from './api-keys.repo.js';
import { teamPermissionAllows } from './team-permission.js';

/** Keys per member and per app (or per member for global keys), as the reference. */
export const MAX_KEYS_PER_SCOPE = 10;

/** `<prefix>-` + a letter + 51..64 alphanumerics (the reference's shape), from a CSPRNG. */
export function generateApiKey(prefix = 'fastgpt'): string {
  const length = 51 + randomBelow(14);
  return `${prefix}-${nanoid(1 + length)}`;
}

/** The list shape of the reference, with the key masked (we never have it in full again). */
export function serializeApiKey(doc: ApiKeyRecord) {
  return {
    _id: doc._id,
    id: doc._id,
    teamId: doc.teamId,
    tmbId: doc.tmbId,
    apiKey: `******${doc.apiKeyTail}`,
    createTime: doc.createTime,
    lastUsedTime: doc.lastUsedTime,
    appId: doc.appId,
    name: doc.name,
    usagePoints: doc.usagePoints,
    limit: { maxUsagePoints: doc.limit?.maxUsagePoints ?? -1, expiredTime: doc.limit?.expiredTime },
  };
}

type LimitInput = { expiredTime?: Date | null; maxUsagePoints: number };
const toLimit = (limit: LimitInput | undefined): ApiKeyRecord['limit'] => ({
  maxUsagePoints: limit?.maxUsagePoints ?? -1,
  ...(limit?.expiredTime ? { expiredTime: limit.expiredTime } : {}),
});

/** The apps module's check: the app, in the caller's team, on which the caller holds `required`. */
type AuthorizeApp = (auth: AuthContext, appId: string, required: 'manage' | 'owner') => Promise<unknown>;
/** The apps module's check after writing a key of an app: throws (404) when the app went meanwhile, the key removed. */
type ConfirmAppWrite = (teamId: string, appId: string) => Promise<void>;

export function createApiKeysService(deps: { keys: ApiKeysRepo; authorizeApp: AuthorizeApp; confirmAppWrite: ConfirmAppWrite; prefix: () => string }) {
  const { keys, authorizeApp } = deps;

  /** Update and delete need owner level: the bound app's owner, or the team owner or key creator. */
  async function ownKey(auth: AuthContext, id: string): Promise<ApiKeyRecord> {
    const key = await keys.findInTeam(id, auth.teamId);
    if (!key) throw Errors.openapiUnExist(`API key ${id} not found in your team`);
    if (key.appId) await authorizeApp(auth, key.appId, 'owner');
    else if (!teamPermissionAllows(auth.teamPermission, 'owner') && key.tmbId !== auth.tmbId) {
      throw Errors.openapiUnAuth('Only the team owner or the creator of this API key can change it');
    }
    return key;
  }

  return {
    async create(auth: AuthContext, input: { appId?: string; name: string; limit?: LimitInput }): Promise<string> {
      if (input.appId) await authorizeApp(auth, input.appId, 'manage');
      else if (!teamPermissionAllows(auth.teamPermission, 'write')) throw Errors.unAuthTeam('Creating an API key needs write permission on the team');
      const { teamId, tmbId } = auth;
      const apiKey = generateApiKey(deps.prefix());
      const inserted = await keys.insertWithin(MAX_KEYS_PER_SCOPE, { teamId, tmbId, apiKeyDigest: digestApiKey(apiKey), apiKeyTail: apiKey.slice(-4), appId: input.appId, name: input.name, limit: toLimit(input.limit) });
      if (!inserted) throw Errors.openapiExceedLimit(`Up to ${MAX_KEYS_PER_SCOPE} API keys per member${input.appId ? ' for one app' : ''}`);
      if (input.appId) {
        // The key is stored, but its secret is shown only in this answer: when the app check fails
        // (the app deleted meanwhile, or the database), the key goes too, or a client's retry
        // would leave an unusable key counting toward the limit.
        await deps.confirmAppWrite(teamId, input.appId).catch(async (error: unknown) => {
          await keys.delete(inserted._id, teamId).catch(() => undefined);
          throw error;
        });
      }
      return apiKey;
    },

    /** App keys: every key of the app (app manage needed). Global keys: the team's, or only your own unless you manage the team. */
    async list(auth: AuthContext, appId: string | undefined) {
      if (appId) await authorizeApp(auth, appId, 'manage');
      const ownOnly = !appId && !teamPermissionAllows(auth.teamPermission, 'manage');
      const docs = await keys.list(auth.teamId, appId, ownOnly ? auth.tmbId : undefined);
      return docs.map(serializeApiKey);
    },

    async update(auth: AuthContext, input: { _id: string; name?: string; limit?: LimitInput }): Promise<void> {
      const key = await ownKey(auth, input._id);
      const found = await keys.update(key._id, key.teamId, { name: input.name, limit: input.limit ? toLimit(input.limit) : undefined });
      // Deleted since the ownership check: the same answer as a key that was never there.
      if (!found) throw Errors.openapiUnExist(`API key ${input._id} not found in your team`);
    },

    async remove(auth: AuthContext, id: string): Promise<void> {
      const key = await ownKey(auth, id);
      await keys.delete(key._id, key.teamId);
    },
  };
}
