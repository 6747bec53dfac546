/** WeChat official account callbacks (plaintext mode): the query is signed with the link's CallbackToken. */
import type { FastifyRequest } from 'fastify';
import { Errors } from '../../../infra/errors.js';
import type { OutLinkDoc } from '../outlinks.repo.js';
import { assertFreshSignature, parseFlatXml, sameText, sha1Signature } from './channel-crypto.js';
import { channelChatId } from './channel-runner.js';
import { str } from './channel-senders.js';
import type { ChannelCallback } from './channel-wecom.js';

const refused = Errors.channelLinkRefused;

/** A callback to `link`'s WeChat receiver: refused (401) unless its query is signed, lately, with the link's CallbackToken. */
export function parseWechatCallback(request: FastifyRequest, link: OutLinkDoc, nowMs: number): ChannelCallback {
  const q = request.query as Record<string, unknown>;
  const callbackToken = str(link.app?.CallbackToken);
  if (!callbackToken) throw refused('This link has no CallbackToken');
  if (!sameText(sha1Signature([callbackToken, str(q.timestamp), str(q.nonce)]), str(q.signature))) throw refused('The signature does not match');
  // The signature covers no body (plaintext mode): its age alone bounds how long a
  // captured query string can carry other messages.
  assertFreshSignature(str(q.timestamp), nowMs);
  return {
    echo: () => str(q.echostr),
    message: () => {
      const message = parseFlatXml(str(request.body));
      if (message.MsgType !== 'text' || !message.FromUserName || !message.Content) return null;
      const user = message.FromUserName;
      return { messageId: message.MsgId, message: { uid: user, chatId: channelChatId('wechat', link, user), text: message.Content, channel: 'official_account', to: user } };
    },
  };
}
