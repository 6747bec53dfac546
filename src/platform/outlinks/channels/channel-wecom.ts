/** WeCom callbacks (always encrypted): signed with the link's CallbackToken, decrypted with its CallbackEncodingAesKey. */
import type { FastifyRequest } from 'fastify';
import { Errors } from '../../../infra/errors.js';
import type { OutLinkDoc } from '../outlinks.repo.js';
import { assertFreshSignature, flatXmlValue, parseFlatXml, sameText, sha1Signature, wecomDecrypt } from './channel-crypto.js';
import type { ChannelDelivery } from './channel-jobs.js';
import { channelChatId } from './channel-runner.js';
import { str } from './channel-senders.js';

const refused = Errors.channelLinkRefused;

/** A WeCom or WeChat callback whose link and query were checked: the console's URL check, or a POSTed message. */
export interface ChannelCallback {
  /** The text that answers the console's URL check (GET). */
  echo(): string;
  /** The text message a POST carries (null: another kind of message or event). */
  message(): ChannelDelivery | null;
}

/**
 * The plaintext of a ciphertext signed (msg_signature over the sorted token, timestamp, nonce and
 * ciphertext) lately with `callbackToken`, decrypted with `aesKey`, and sent to `receiveId` (when
 * set): WeCom's message crypto, which WeChat's safe mode shares. The signature is checked first.
 */
export function openSignedCiphertext(q: Record<string, unknown>, secrets: { callbackToken: string; aesKey: string; receiveId: string }, encrypted: string, nowMs: number): string {
  if (!sameText(sha1Signature([secrets.callbackToken, str(q.timestamp), str(q.nonce), encrypted]), str(q.msg_signature))) throw refused('The message signature does not match');
  assertFreshSignature(str(q.timestamp), nowMs);
  let plain: { message: string; receiveId: string };
  try {
    plain = wecomDecrypt(encrypted, secrets.aesKey);
  } catch {
    // A key that is not base64, or a message that is not this key's ciphertext.
    throw refused('The message could not be decrypted with this link’s CallbackEncodingAesKey');
  }
  if (secrets.receiveId && plain.receiveId !== secrets.receiveId) throw refused('The message was not sent to this corp or account');
  return plain.message;
}

/** A callback to `link`'s WeCom receiver: refused (401) unless the link holds both callback secrets. */
export function parseWecomCallback(request: FastifyRequest, link: OutLinkDoc, nowMs: number): ChannelCallback {
  const q = request.query as Record<string, unknown>;
  const callbackToken = str(link.app?.CallbackToken);
  const aesKey = str(link.app?.CallbackEncodingAesKey);
  if (!callbackToken || aesKey.length !== 43) throw refused('This link has no CallbackToken or 43-character CallbackEncodingAesKey');
  const verify = (encrypted: string) => openSignedCiphertext(q, { callbackToken, aesKey, receiveId: str(link.app?.CorpId) }, encrypted, nowMs);
  return {
    echo: () => verify(str(q.echostr)),
    message: () => {
      // Only the ciphertext is read before the signature is checked; the message after.
      const message = parseFlatXml(verify(flatXmlValue(str(request.body), 'Encrypt')));
      if (message.MsgType !== 'text' || !message.FromUserName || !message.Content) return null;
      const user = message.FromUserName;
      return { messageId: message.MsgId, message: { uid: user, chatId: channelChatId('wecom', link, user), text: message.Content, channel: 'wecom', to: user } };
    },
  };
}
