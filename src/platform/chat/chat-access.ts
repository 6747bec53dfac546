/**
 * Chat permission rules (contract §2.1 authChatCrud, §4.8): which app a caller chats with and
 * whether an existing chat is theirs.
 */
import { PermissionValue } from '../../domain/permission.js';
import { Errors } from '../../infra/errors.js';
import { isObjectIdHex } from '../../infra/mongo.js';
import type { AuthContext } from '../auth/types.js';
import type { AppDoc, AppSource } from './app-source.repo.js';
import type { ChatDoc, ChatRepo } from './chat.repo.js';

const isTeamOwner = (auth: AuthContext) => auth.role === 'owner' || auth.isRoot || auth.teamPermission === PermissionValue.owner;
const hasTeamManage = (auth: AuthContext) => (auth.teamPermission & PermissionValue.manage) === PermissionValue.manage;

export function createChatAccess(deps: { repo: ChatRepo; apps: AppSource }) {
  /** The app a chat request runs, by credential kind. */
  async function appForChat(auth: AuthContext, bodyAppId: string | undefined): Promise<AppDoc> {
    if (auth.authType === 'outLink') return deps.apps.findInTeam(auth.teamId, auth.appId!);
    if (auth.authType === 'teamDomain') {
      if (!bodyAppId) throw Errors.missingParams("Missing field 'appId': team-space chats need the app id");
      return deps.apps.findInTeam(auth.teamId, bodyAppId);
    }
    if (auth.authType === 'apikey') {
      // A bound key always runs its own app, whatever appId the body names (as the reference).
      if (auth.appId) return deps.apps.findInTeam(auth.teamId, auth.appId);
      const requested = bodyAppId ?? auth.legacyAppId;
      if (!requested) throw Errors.missingParams('Key is error. You need to use the app key rather than the account key (or send appId).');
      return (await deps.apps.authorize(auth, requested, 'read')).app;
    }
    if (!bodyAppId) throw Errors.missingParams("Missing field 'appId' (appId is empty)");
    return (await deps.apps.authorize(auth, bodyAppId, 'read')).app;
  }

  /** Whether an existing chat may be used by this caller (undefined chat: allowed). */
  function mayUseChat(auth: AuthContext, chat: ChatDoc | null, required: 'read' | 'write'): boolean {
    if (!chat) return true;
    if (auth.authType === 'outLink') return chat.shareId === auth.outLink?.shareId && chat.outLinkUid === auth.outLink?.outLinkUid;
    if (auth.authType === 'teamDomain') return chat.teamId.toHexString() === auth.teamId && chat.outLinkUid === auth.outLink?.outLinkUid;
    if (chat.teamId.toHexString() !== auth.teamId) return false;
    if (isTeamOwner(auth) || chat.tmbId.toHexString() === auth.tmbId) return true;
    return required === 'write' && hasTeamManage(auth);
  }

  /** authChatCrud: the app must be the caller's; an existing chat must be theirs. */
  async function authChatCrud(auth: AuthContext, appId: string, chatId: string | undefined, required: 'read' | 'write'): Promise<ChatDoc | null> {
    if (!isObjectIdHex(appId)) throw Errors.missingParams("Invalid field 'appId': expected a 24-character hex id");
    if (auth.authType === 'outLink' && auth.appId !== appId) throw Errors.unAuthChat('This share link belongs to another app');
    if (auth.authType === 'apikey' && auth.appId && auth.appId !== appId) throw Errors.unAuthApp('This API key is bound to another app');
    if (auth.authType !== 'outLink') await deps.apps.findInTeam(auth.teamId, appId);
    if (!chatId) return null;
    const chat = await deps.repo.findChat(appId, chatId);
    if (!mayUseChat(auth, chat, required)) throw Errors.unAuthChat(`Chat ${chatId} belongs to someone else`);
    return chat;
  }

  return { appForChat, mayUseChat, authChatCrud };
}

export type ChatAccess = ReturnType<typeof createChatAccess>;
