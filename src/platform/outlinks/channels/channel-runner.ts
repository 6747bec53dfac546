/** Runs the link's app on one incoming channel message (channel-jobs.ts sends the answer back through the channel). */
import { createHmac } from 'node:crypto';
import { valuesText } from '../../../domain/workflow/chat-values.js';
import { type AppError, Errors, isAppError } from '../../../infra/errors.js';
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
 * The conversation's chat when the one of its readable id was started by another caller (someone
 * who learnt the link's id can start a chat of that id in the same app, through the web or an API
 * key; before this, every channel turn was then refused): keyed with the link's shareId, which such
 * a caller does not hold, so it cannot be taken in advance too.
 */
export function channelPrivateChatId(link: Pick<OutLinkDoc, 'shareId'>, chatId: string): string {
  return `${chatId}-${createHmac('sha256', link.shareId).update(chatId).digest('base64url').slice(0, 22)}`;
}

/**
 * A refusal as a channel's users may read it: never an internal id (a link or chat id, a user's
 * id on the channel), which a group's members would all see.
 */
function refusalText(error: AppError, input: ChannelMessage): string {
  if (error.statusText === 'unAuthChat') return 'this conversation cannot be answered here.';
  let text = error.message;
  for (const id of [input.chatId, input.uid]) if (id) text = text.replaceAll(id, '…');
  return text.replace(/\b[0-9a-f]{24}\b/gi, '…');
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
    let chatId = input.chatId;
    let existing = await chat.findOwnChat(auth, app._id, chatId).catch((error: unknown) => {
      if (isAppError(error) && error.statusText === 'unAuthChat') return undefined;
      throw error;
    });
    // Started by someone else: the conversation goes on in a chat of its own, which no one else can name.
    if (existing === undefined) {
      chatId = channelPrivateChatId(link, chatId);
      existing = await chat.findOwnChat(auth, app._id, chatId);
    }
    const result = await chat.run.runTurn({
      app,
      caller: callerFromAuth(auth, link.responseDetail),
      chatId,
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
    if (isAppError(error)) return link.defaultResponse || `Sorry, the app could not answer: ${refusalText(error, input)}`;
    logUnexpected(error);
    return link.defaultResponse || 'Sorry, the app could not answer right now.';
  }
}
