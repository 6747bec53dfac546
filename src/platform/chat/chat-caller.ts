/** Who runs a chat, reduced to what the chat rules need. */
import type { AuthContext } from '../auth/types.js';
import { usageSourceOfCaller } from '../identity/usage-charge.js';
import type { ChatSource } from './chat.repo.js';

export interface ChatCaller {
  auth: AuthContext;
  /** The `userId` variable and the stored outLinkUid: share/team uid, else the tmbId. */
  uid: string;
  shareId?: string;
  teamSpace: boolean;
  /** Share and team callers only see publicly filtered node responses. */
  publicOnly: boolean;
  /** Whether flowResponses are sent at the end of a detailed stream. */
  responseDetail: boolean;
  /** Set when an API/session caller named its end user (4.8.13 customUid). */
  customUid?: boolean;
}

export function callerFromAuth(auth: AuthContext, linkResponseDetail = false): ChatCaller {
  if (auth.authType === 'outLink') {
    return { auth, uid: auth.outLink?.outLinkUid ?? '', shareId: auth.outLink?.shareId, teamSpace: false, publicOnly: true, responseDetail: linkResponseDetail };
  }
  if (auth.authType === 'teamDomain') {
    return { auth, uid: auth.outLink?.outLinkUid ?? '', teamSpace: true, publicOnly: true, responseDetail: true };
  }
  return { auth, uid: auth.tmbId, teamSpace: false, publicOnly: false, responseDetail: true };
}

/**
 * Whose chats this caller's are, as chat-access.ts mayUseChat judges an existing chat: a share
 * link's visitor (the link and their uid), a team-space visitor (the team and their uid), else
 * the team member (a session or an API key, whatever end user a customUid names).
 */
export function chatOwnerOf(caller: ChatCaller): string {
  const { auth } = caller;
  if (caller.shareId) return JSON.stringify(['share', caller.shareId, caller.uid]);
  if (caller.teamSpace) return JSON.stringify(['team', auth.teamId, caller.uid]);
  return JSON.stringify(['member', auth.teamId, auth.tmbId]);
}

/** 4.8.13: `customUid` names the end user of an API or session chat. */
export function withCustomUid(caller: ChatCaller, customUid: string | undefined): ChatCaller {
  if (!customUid || caller.shareId || caller.teamSpace) return caller;
  return Object.assign({}, caller, { uid: customUid, customUid: true });
}

export function chatSourceOf(caller: ChatCaller, channel?: ChatSource): ChatSource {
  if (channel) return channel;
  if (caller.shareId) return 'share';
  if (caller.auth.authType === 'apikey') return 'api';
  if (caller.teamSpace) return 'team';
  return 'online';
}

/** A messaging channel names itself; otherwise the credential decides, as for every other model call. */
export function usageSourceOf(caller: ChatCaller, channel?: ChatSource): string {
  if (channel && channel !== 'share') return channel;
  return usageSourceOfCaller(caller.auth);
}
