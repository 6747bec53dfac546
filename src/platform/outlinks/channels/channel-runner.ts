/** Runs the link's app on one incoming channel message (channel-jobs.ts sends the answer back through the channel). */
import { valuesText } from '../../../domain/workflow/chat-values.js';
import { Errors, isAppError } from '../../../infra/errors.js';
import { nanoid } from '../../../infra/random-string.js';
import type { ChatSource } from '../../chat/chat.repo.js';
import { callerFromAuth } from '../../chat/chat-caller.js';
import type { ChatServices } from '../../chat/chat-module.js';
import type { OutLinkDoc } from '../outlinks.repo.js';

/**
 * The chat of a conversation on one channel link. The link is part of it: two links of one app
 * (two companies' WeCom apps, say) may see the same user or chat id, and must not share a chat.
 */
export function channelChatId(prefix: 'feishu' | 'wecom' | 'wechat', link: Pick<OutLinkDoc, '_id'>, conversation: string): string {
  return `${prefix}-${link._id}-${conversation}`;
}

/** One incoming text message: who sent it, the chat it belongs to, and the channel it came by. */
export interface ChannelMessage {
  uid: string;
  chatId: string;
  text: string;
  channel: ChatSource;
}

/**
 * Runs the link's app on one message; the answer to send (its text, the link's defaultResponse,
 * or a refusal the channel's user may read), '' when there is none. `signal` stops the run.
 */
export async function runChannelTurn(chat: ChatServices, link: OutLinkDoc, input: ChannelMessage, signal: AbortSignal, logUnexpected: (error: unknown) => void): Promise<string> {
  try {
    // Its QPM slot was taken by its job (channel-jobs.ts), per link: a channel message has no visitor address. The hook's start names the user.
    const uid = await chat.outLinks.startChat(link, input.uid, input.text);
    const member = await chat.memberContext(link.tmbId);
    if (!member) throw Errors.linkUnInvalid('The creator of this link is no longer a member of its team');
    const auth = Object.assign({}, member, { authType: 'outLink' as const, appId: link.appId, outLink: { shareId: link.shareId, outLinkUid: uid } });
    const app = await chat.apps.findInTeam(auth.teamId, auth.appId);
    // The conversation's chat must be this channel user's (a chat of that id started elsewhere,
    // by someone who learnt the link's id, would otherwise receive the user's messages).
    const existing = await chat.findOwnChat(auth, app._id, input.chatId);
    const result = await chat.run.runTurn({
      app,
      caller: callerFromAuth(auth, link.responseDetail),
      chatId: input.chatId,
      chat: existing,
      items: [{ dataId: nanoid(22), obj: 'Human', value: [{ type: 'text', text: { content: input.text } }] }],
      variables: {},
      responseChatItemId: nanoid(),
      stream: false,
      mode: 'chat',
      emit: () => undefined,
      signal,
      save: true,
      channel: input.channel,
    });
    return valuesText(result.assistantResponses).trim() || link.defaultResponse || '';
  } catch (error) {
    // The channel's users read a known refusal as it is written for clients (an expired link, its
    // points used up, a provider failure); anything else stays in the log, as a 500 would.
    if (isAppError(error)) return link.defaultResponse || `Sorry, the app could not answer: ${error.message}`;
    logUnexpected(error);
    return link.defaultResponse || 'Sorry, the app could not answer right now.';
  }
}
