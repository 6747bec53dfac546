/**
 * Feishu/Lark events: what one must prove before its receiver acts on it (the raw JSON body is
 * kept, as Feishu signs those exact bytes, and checked against the link's encryptKey and
 * verificationToken), and the text message it carries.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Errors } from '../../../infra/errors.js';
import { assertSafeInput } from '../../../infra/input-guard.js';
import type { OutLinkDoc } from '../outlinks.repo.js';
import { feishuDecrypt, feishuSignature, sameText, withinSignatureWindow } from './channel-crypto.js';
import type { ChannelDelivery } from './channel-jobs.js';
import { channelChatId } from './channel-runner.js';
import { str } from './channel-senders.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The JSON body as received (Feishu receivers only): what X-Lark-Signature covers. */
    channelRawBody: string;
  }
}

/** Reads JSON bodies in this scope as the service does everywhere, keeping their text. */
export function keepRawJsonBodies(scope: FastifyInstance): void {
  const strictJson = scope.getDefaultJsonParser('error', 'error');
  scope.decorateRequest('channelRawBody', '');
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    request.channelRawBody = body as string;
    // As plugins/request-body.ts: a blank body is `{}`.
    if ((body as string).trim() === '') return done(null, {});
    strictJson(request, body as string, done);
  });
}

const refused = Errors.channelLinkRefused;

/** The decrypted event; a payload that is not a JSON object is the sender's mistake (400). */
function decrypted(body: Record<string, unknown>, encryptKey: string): Record<string, unknown> {
  // Feishu encrypts every event of an app with an Encrypt Key: a plaintext body is not from it.
  if (typeof body.encrypt !== 'string') throw refused('This link has an encryptKey: the event must be encrypted');
  let event: unknown;
  try {
    event = JSON.parse(feishuDecrypt(body.encrypt, encryptKey));
  } catch {
    throw refused('The event could not be decrypted with this link’s encryptKey');
  }
  if (typeof event !== 'object' || event === null || Array.isArray(event)) throw Errors.missingParams('The decrypted event is not a JSON object');
  // The request guard saw only the ciphertext: the event gets the same check.
  assertSafeInput(event, 'encrypt');
  return event as Record<string, unknown>;
}

/** X-Lark-Signature over the raw body, made within the signature window. */
function assertSigned(request: FastifyRequest, encryptKey: string, nowMs: number): void {
  const header = (name: string) => str(request.headers[name]);
  const timestamp = header('x-lark-request-timestamp');
  const expected = feishuSignature(timestamp, header('x-lark-request-nonce'), encryptKey, request.channelRawBody);
  if (!sameText(header('x-lark-signature'), expected)) throw refused('The X-Lark-Signature does not match this link’s encryptKey');
  if (!withinSignatureWindow(timestamp, nowMs)) throw refused('The X-Lark-Request-Timestamp is more than 5 minutes away from this server’s clock');
}

/**
 * The event of a POST to a Feishu receiver, or a 401. With an encryptKey the body must be
 * encrypted, and every event but the console's URL check must carry Feishu's signature (Feishu's
 * SDK answers that check unsigned too; decrypting it proves the key). A verificationToken, when
 * set, must match. A link with neither secret cannot tell Feishu from anyone else: refused
 * (docs/decisions.md#channel-callbacks).
 */
function openFeishuEvent(request: FastifyRequest, link: OutLinkDoc, nowMs: number): Record<string, unknown> {
  const encryptKey = str(link.app?.encryptKey);
  const verification = str(link.app?.verificationToken);
  if (!encryptKey && !verification) throw refused('This link has neither an encryptKey nor a verificationToken to check Feishu events with');
  const body = (request.body ?? {}) as Record<string, unknown>;
  if (!encryptKey && typeof body.encrypt === 'string') throw refused('This link has no encryptKey to decrypt the event');
  const event = encryptKey ? decrypted(body, encryptKey) : body;
  const given = str(event.token) || str((event.header as Record<string, unknown> | undefined)?.token);
  if (verification && !sameText(given, verification)) throw refused('The verification token does not match this link');
  if (encryptKey && event.type !== 'url_verification') assertSigned(request, encryptKey, nowMs);
  return event;
}

/** A Feishu POST: the console's URL check (its challenge is answered back), or an event with the text message to answer (null: none). */
export type FeishuEvent = { challenge: unknown } | { delivery: ChannelDelivery | null };

/** The event of a POST to `link`'s Feishu receiver, checked as openFeishuEvent says; text messages only. */
export function parseFeishuEvent(request: FastifyRequest, link: OutLinkDoc, nowMs: number): FeishuEvent {
  const body = openFeishuEvent(request, link, nowMs);
  if (body.type === 'url_verification') return { challenge: body.challenge };
  const header = (body.header ?? {}) as Record<string, unknown>;
  const event = (body.event ?? {}) as { message?: Record<string, unknown>; sender?: { sender_id?: Record<string, unknown> } };
  if (header.event_type !== 'im.message.receive_v1' || event.message?.message_type !== 'text') return { delivery: null };
  let text = '';
  try {
    text = str((JSON.parse(str(event.message.content)) as { text?: unknown }).text).replace(/@_user_\d+/g, '').trim();
  } catch {
    text = '';
  }
  const messageId = str(event.message.message_id);
  const chat = str(event.message.chat_id);
  const sender = str(event.sender?.sender_id?.open_id);
  // A group is one conversation shared by its members, so the group owns its chat (owned by
  // the first member who wrote, every other member's turn was refused); a p2p chat is its user's.
  const uid = event.message.chat_type === 'p2p' ? sender || chat : chat || sender;
  if (!text || !messageId || !uid) return { delivery: null };
  const chatId = channelChatId('feishu', link, chat || uid);
  // Feishu's redeliveries of an event share its event_id, the job's id; the answer replies to the message.
  return { delivery: { messageId: str(header.event_id), message: { uid, chatId, text, channel: 'feishu', to: messageId } } };
}
