import type { TestApp } from '../helpers/app.js';
import { ok } from './apps-helpers.js';

/**
 * A Feishu `im.message.receive_v1` text event as Feishu posts it: its event id, message id and
 * text; the sender's and chat's ids derived from `key` (distinct keys: distinct users and chats).
 */
export function feishuTextEvent(options: { eventId: string; messageId: string; text: string; key: string; appId?: string }) {
  return {
    schema: '2.0',
    header: { event_id: options.eventId, event_type: 'im.message.receive_v1', create_time: '1700000000000', token: 'vt', app_id: options.appId ?? 'cli_t', tenant_key: 'tk' },
    event: {
      sender: { sender_id: { open_id: `ou_${options.key}` }, sender_type: 'user', tenant_key: 'tk' },
      message: { message_id: options.messageId, chat_id: `oc_${options.key}`, chat_type: 'p2p', message_type: 'text', create_time: '1700000000000', content: JSON.stringify({ text: options.text }) },
    },
  };
}

/** A Feishu channel link of `appId` whose API is `feishuOrigin`/feishu (app cli_s, token vt); its share and stored ids. */
export async function createFeishuLink(t: TestApp, token: string, appId: string, feishuOrigin: string, name: string): Promise<{ shareId: string; linkId: string }> {
  const shareId = (await ok(t, token, 'POST', '/support/outLink/create', {
    appId,
    type: 'feishu',
    name,
    app: { appId: 'cli_s', appSecret: 's', verificationToken: 'vt', apiBaseUrl: `${feishuOrigin}/feishu` },
  })) as string;
  const linkId = String((await t.app.mongo.db.collection('outlinks').findOne({ shareId }))?._id);
  return { shareId, linkId };
}
