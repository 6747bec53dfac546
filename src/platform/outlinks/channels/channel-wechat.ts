/**
 * WeChat official account callbacks: the query is signed with the link's CallbackToken; in safe
 * mode (`encrypt_type=aes`, a link with a CallbackEncodingAesKey) the message is encrypted and
 * signed as WeCom's (msg_signature), its receive id the link's appId.
 */
import type { FastifyRequest } from 'fastify';
import { Errors } from '../../../infra/errors.js';
import type { OutLinkDoc } from '../outlinks.repo.js';
import { assertFreshSignature, flatXmlValue, parseFlatXml, sameText, sha1Signature } from './channel-crypto.js';
import { channelChatId } from './channel-runner.js';
import { str } from './channel-senders.js';
import { type ChannelCallback, openSignedCiphertext } from './channel-wecom.js';

const refused = Errors.channelLinkRefused;

/** A callback to `link`'s WeChat receiver: refused (401) unless its query is signed, lately, with the link's CallbackToken. */
export function parseWechatCallback(request: FastifyRequest, link: OutLinkDoc, nowMs: number): ChannelCallback {
  const q = request.query as Record<string, unknown>;
  const callbackToken = str(link.app?.CallbackToken);
  if (!callbackToken) throw refused('This link has no CallbackToken');
  if (!sameText(sha1Signature([callbackToken, str(q.timestamp), str(q.nonce)]), str(q.signature))) throw refused('The signature does not match');
  // In plaintext mode the signature covers no body: its age alone bounds how long a captured
  // query string can carry other messages.
  assertFreshSignature(str(q.timestamp), nowMs);
  const aesKey = str(link.app?.CallbackEncodingAesKey);
  /** The message XML: decrypted in safe mode; a plaintext body only on a link without a key. */
  const messageXml = (): string => {
    const body = str(request.body);
    if (str(q.encrypt_type) === 'aes') {
      if (aesKey.length !== 43) {
        request.log.warn('WeChat safe-mode message refused: the link has no 43-character CallbackEncodingAesKey');
        throw refused('The message is encrypted (safe mode) and this link has no 43-character CallbackEncodingAesKey');
      }
      return openSignedCiphertext(q, { callbackToken, aesKey, receiveId: str(link.app?.appId) }, flatXmlValue(body, 'Encrypt'), nowMs);
    }
    // A key set means the account was switched to safe mode: a plaintext body proves nothing.
    if (aesKey) {
      request.log.warn('WeChat plaintext message refused: the link has a CallbackEncodingAesKey (safe mode expected)');
      throw refused('This link has a CallbackEncodingAesKey: messages must come in safe mode (encrypt_type=aes)');
    }
    return body;
  };
  return {
    echo: () => str(q.echostr),
    message: () => {
      const message = parseFlatXml(messageXml());
      if (!message.MsgType) {
        // Acknowledged, it would never be delivered again nor answered.
        request.log.warn('WeChat callback refused: its body is not a message (no MsgType)');
        throw Errors.missingParams('The callback body is not a WeChat message (no MsgType)');
      }
      if (message.MsgType !== 'text' || !message.FromUserName || !message.Content) return null;
      if (link.app?.isVerified === false) {
        request.log.warn('WeChat link has isVerified false: answers go through the customer-service API, which unverified accounts may not call (errcode 48001); passive replies are not supported');
      }
      const user = message.FromUserName;
      return { messageId: message.MsgId, message: { uid: user, chatId: channelChatId('wechat', link, user), text: message.Content, channel: 'official_account', to: user } };
    },
  };
}
