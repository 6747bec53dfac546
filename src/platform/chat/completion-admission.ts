/**
 * Whether a v1/chat/completions turn may run, and as whom: the app, the share link and its
 * visitor, the chat it continues, the caller. The checks run in a fixed order (see below), so a
 * refused request spends neither the link's hook start nor a QPM slot.
 */
import type { z } from 'zod';
import { valuesText } from '../../domain/workflow/chat-values.js';
import { messagesToChatItems, type RequestMessage } from '../../domain/workflow/messages.js';
import type { ChatItem, NodeResponse } from '../../domain/workflow/types.js';
import { Errors } from '../../infra/errors.js';
import type { AuthContext } from '../auth/types.js';
import type { OutLinkDoc } from '../outlinks/outlinks.repo.js';
import type { AppDoc } from './app-source.js';
import type { ChatDoc } from './chat.repo.js';
import type { completionsSchema } from './chat.schema.js';
import { type ChatCaller, callerFromAuth, withCustomUid } from './chat-caller.js';
import type { ChatModule } from './chat-module.js';

type CompletionInput = Pick<z.output<typeof completionsSchema>, 'messages' | 'variables' | 'appId' | 'chatId' | 'outLinkUid' | 'customUid'>;

export interface AdmittedCompletion {
  app: AppDoc;
  isPlugin: boolean;
  items: ChatItem[];
  /** The share link the request came through, if any. */
  link?: OutLinkDoc;
  /** The token the client sent, which the link's hooks receive. */
  linkToken: string;
  /** The chat the turn continues (null: none yet). */
  existing: ChatDoc | null;
  caller: ChatCaller;
}

export async function admitCompletion(
  chat: Pick<ChatModule, 'access' | 'outLinks' | 'findOwnChat'>,
  credential: AuthContext,
  input: CompletionInput,
  ip: string,
): Promise<AdmittedCompletion> {
  const items = messagesToChatItems(input.messages as RequestMessage[]);
  const question = items.length ? valuesText(items[items.length - 1]!.value) : JSON.stringify(input.variables);
  // Hooks receive the token the client sent (authToken), not the uid it resolved to.
  const linkToken = input.outLinkUid ?? credential.outLink?.outLinkUid ?? '';
  const app = await chat.access.appForChat(credential, input.appId);
  const isPlugin = app.type === 'plugin';
  if (!isPlugin && input.messages.length === 0) throw Errors.missingParams('messages is empty');
  // Through a share link: expiry and points, then the hook's `start`, which names the visitor.
  const link = credential.authType === 'outLink' ? await chat.outLinks.linkOf(credential) : undefined;
  const visitor = link ? await chat.outLinks.startChat(link, linkToken, question) : undefined;
  const auth = visitor ? Object.assign({}, credential, { outLink: { shareId: link!.shareId, outLinkUid: visitor } }) : credential;
  // A turn goes into the caller's own chat (a team owner's: any): a team manager's right to
  // delete or rename other members' chats is no right to talk in them.
  const existing = input.chatId ? await chat.findOwnChat(auth, app._id, input.chatId) : null;
  // The QPM slot comes last: a request refused above takes none.
  if (link) await chat.outLinks.takeChatSlot(link, ip);
  const caller = withCustomUid(callerFromAuth(auth, link?.responseDetail ?? false), input.customUid);
  return { app, isPlugin, items, link, linkToken, existing, caller };
}

/** After a run: a share link's hook hears `finish` (not awaited; its reply is ignored). */
export function finishTurn(chat: Pick<ChatModule, 'outLinks'>, admitted: AdmittedCompletion, flowResponses: NodeResponse[]): void {
  const { link, linkToken, app } = admitted;
  if (link) chat.outLinks.finish(link, { token: linkToken, appName: app.name, responseData: flowResponses });
}
