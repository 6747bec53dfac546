import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { authHeaders, createUser, login } from '../helpers/platform.js';
import { ok } from './apps-helpers.js';
import { createPublishedApp, simpleChatGraph, startChatApp } from './chat-helpers.js';

/**
 * A chat's records come back in the order its turns were saved, also when two replicas saved
 * them in one second: an ObjectId orders by its second, then by the process that made it, so
 * ids alone could put the later turn first (in the history shown and the one sent to the model).
 */
let t: TestApp;
let fake: FakeOpenAi;
let token: string;
let appId: string;

const completions = (chatId: string, content: string) =>
  t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: authHeaders(token), payload: { appId, chatId, messages: [{ role: 'user', content }] } });

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  await createUser(t, { username: 'order', password: 'password-o1' });
  token = await login(t, 'order', 'password-o1');
  appId = await createPublishedApp(t, token, 'Echo bot', simpleChatGraph);
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('chat records saved by two replicas in one second', () => {
  it('come back in the order the turns were saved, in the history shown and the one sent to the model', async () => {
    expect((await completions('two-replicas', 'first')).statusCode).toBe(200);
    expect((await completions('two-replicas', 'second')).statusCode).toBe(200);
    // The second turn's items as another process would have made them in the first turn's second:
    // the same timestamp, lower process bytes, so their ids sort before the first turn's.
    const items = t.app.mongo.db.collection('chatitems');
    const stored = await items.find({ appId: new ObjectId(appId), chatId: 'two-replicas' }).sort({ time: 1 }).toArray();
    expect(stored).toHaveLength(4);
    const firstSecond = (stored[0]!._id as ObjectId).toHexString().slice(0, 8);
    const secondTurn = stored.slice(2);
    await items.deleteMany({ _id: { $in: secondTurn.map((item) => item._id) } });
    await items.insertMany(secondTurn.map((item, index) => ({ ...item, _id: new ObjectId(`${firstSecond}0000000000${String(index + 1).padStart(6, '0')}`) })));

    const init = await ok(t, token, 'GET', '/core/chat/init', { appId, chatId: 'two-replicas' });
    const shown = init.history.map((item: { value: { text: { content: string } }[] }) => item.value[0]?.text.content);
    expect(shown).toEqual(['first', 'Echo: first', 'second', 'Echo: second']);
    expect((await completions('two-replicas', 'third')).statusCode).toBe(200);
    const sent = fake.requests.filter((request) => request.path === '/v1/chat/completions').at(-1)?.body as { messages: { content: string }[] };
    expect(sent.messages.map((message) => message.content)).toEqual(['Be brief.', 'first', 'Echo: first', 'second', 'Echo: second', 'third']);
  });
});
