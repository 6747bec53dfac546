/**
 * How long a question's inline images (stored as chat files: chat/inline-images.ts) are kept:
 * while a stored chat item names them, whatever fails after the save; taken back when no item
 * does (an answer to a stored interactive node stores no question item). And a week on, when
 * their read links' tokens have expired, a run of the same chat still sends them to the model,
 * while the links stay refused over HTTP, and the chat's window (core/chat/init) shows them with
 * new links.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileReadUrl, signFileToken } from '../../src/platform/datasets/files/file-token.js';
import type { TestApp } from '../helpers/app.js';
import type { FakeOpenAi } from '../helpers/fake-openai.js';
import { apiKeyHeaders, authHeaders, createApiKey, createUser, login } from '../helpers/platform.js';
import { createPublishedApp, selectGraph, simpleChatGraph, sseFrames, startChatApp } from './chat-helpers.js';

let t: TestApp;
let fake: FakeOpenAi;
let key: string;
let tok: string;
let visionApp: string;

const DAY = 24 * 3_600_000;
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
const SMALL = `data:image/png;base64,${PNG.toString('base64')}`;

/** The vision switch on: the model sees the question's (and history's) images. */
const visionGraph = {
  ...simpleChatGraph,
  nodes: simpleChatGraph.nodes.map((node) => (node.nodeId === 'ai' ? { ...node, inputs: [...node.inputs, { key: 'aiChatVision', value: true }] } : node)),
};

type Value = { type: string; file?: { type: string; name?: string; url: string } };
const question = (text: string, image?: string) => ({ role: 'user', content: image === undefined ? text : [{ type: 'text', text }, { type: 'image_url', image_url: { url: image } }] });
const completions = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/chat/completions', headers: apiKeyHeaders(key), payload });
const chatFiles = (chatId: string) => t.app.mongo.db.collection('chat.files').find({ chatId }).toArray();
const humanItems = (chatId: string) => t.app.mongo.db.collection('chatitems').find({ chatId, obj: 'Human' }).sort({ _id: 1 }).toArray();
const imageLinkOf = (item: { value: Value[] } | undefined) => item?.value.find((value) => value.type === 'file')?.file?.url;
/** The image URLs of the last model call, all messages together. */
const lastCallImages = () =>
  (fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!.body as { messages: { content: unknown }[] }).messages.flatMap((m) =>
    Array.isArray(m.content) ? (m.content as { type: string; image_url?: { url: string } }[]).filter((p) => p.type === 'image_url').map((p) => p.image_url!.url) : [],
  );

/** A read link of the chat file stored for `chatId`, signed eight days ago (its token expired a day ago). */
async function expiredLinkOf(chatId: string): Promise<string> {
  const [file] = await chatFiles(chatId);
  expect(file).toBeDefined();
  const claims = { bucketName: 'chat' as const, teamId: String(file!.metadata.teamId), tmbId: String(file!.metadata.tmbId), fileId: file!._id.toHexString() };
  return fileReadUrl(signFileToken(t.app.config.FILE_TOKEN_KEY, claims, Date.now() - 8 * DAY), 'image-1.png');
}

/** The chat's first question names its image by `link` (as a week-old item does). */
async function questionImageIs(chatId: string, link: string): Promise<void> {
  const [item] = await humanItems(chatId);
  const others = (item!.value as Value[]).filter((value) => value.type !== 'file');
  await t.app.mongo.db.collection('chatitems').updateOne({ _id: item!._id }, { $set: { value: [...others, { type: 'file', file: { type: 'image', name: 'image-1.png', url: link } }] } });
}

beforeAll(async () => {
  ({ t, fake } = await startChatApp());
  fake.reply = () => 'a photo';
  await createUser(t, { username: 'keeper', password: 'password-k1' });
  tok = await login(t, 'keeper', 'password-k1');
  visionApp = await createPublishedApp(t, tok, 'Vision bot', visionGraph);
  key = await createApiKey(t, tok);
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe("a question's inline images", () => {
  it('stay with the saved question when the stream fails after the save', async () => {
    const run = t.app.chat.run;
    const runTurn = run.runTurn;
    // Something after the save fails (a run detail the stream cannot send).
    run.runTurn = async (turn) => {
      const result = await runTurn(turn);
      return Object.defineProperty({ ...result }, 'flowResponses', {
        get() {
          throw new Error('a run detail that cannot be sent');
        },
      });
    };
    let answer: Awaited<ReturnType<typeof completions>>;
    try {
      answer = await completions({ appId: visionApp, chatId: 'failed-after-save', stream: true, messages: [question('look', SMALL)] });
    } finally {
      run.runTurn = runTurn;
    }
    expect(sseFrames(answer.body).some((frame) => frame.event === 'error')).toBe(true);
    const link = imageLinkOf((await humanItems('failed-after-save'))[0] as unknown as { value: Value[] });
    expect(link).toMatch(/^\/api\/common\/file\/read\?/);
    expect(await chatFiles('failed-after-save')).toHaveLength(1);
    expect((await t.app.inject({ method: 'GET', url: link! })).statusCode).toBe(200);
  });

  it('sent with the answer to a stored interactive node (no question item is stored) are taken back', async () => {
    const selectApp = await createPublishedApp(t, tok, 'Select bot', selectGraph);
    expect((await completions({ appId: selectApp, chatId: 'answered-with-photo', messages: [question('start')] })).statusCode).toBe(200);
    const answer = await completions({ appId: selectApp, chatId: 'answered-with-photo', messages: [question('Confirm', SMALL)] });
    expect(answer.statusCode, answer.body).toBe(200);
    expect(answer.body).toContain('Done: Confirm');
    // The chat stores the option picked (on the item that asked), not the question: nothing names the image.
    expect((await humanItems('answered-with-photo')).map((item) => imageLinkOf(item as unknown as { value: Value[] }))).toEqual([undefined]);
    expect(await chatFiles('answered-with-photo')).toHaveLength(0);
  });
});

describe('an image of a chat whose read link expired (7 days)', () => {
  it("is still sent to the model in the chat's later turns; the link itself stays refused over HTTP", async () => {
    expect((await completions({ appId: visionApp, chatId: 'week-old', messages: [question('what is this?', SMALL)] })).statusCode).toBe(200);
    const link = await expiredLinkOf('week-old');
    await questionImageIs('week-old', link);
    expect((await t.app.inject({ method: 'GET', url: link })).statusCode).toBe(403);

    const next = await completions({ appId: visionApp, chatId: 'week-old', messages: [question('and now?')] });
    expect(next.statusCode, next.body).toBe(200);
    expect(lastCallImages()).toEqual([SMALL]);
  });

  it("is not read for another chat of the app, a chat of another app of the team, nor when the link's signature is not this service's", async () => {
    expect((await completions({ appId: visionApp, chatId: 'photo-source', messages: [question('mine', SMALL)] })).statusCode).toBe(200);
    const link = await expiredLinkOf('photo-source');
    // Another chat of the same app (another visitor's, say) naming the link: left out.
    expect((await completions({ appId: visionApp, chatId: 'neighbour', messages: [question('hello')] })).statusCode).toBe(200);
    await questionImageIs('neighbour', link);
    expect((await completions({ appId: visionApp, chatId: 'neighbour', messages: [question('and this?')] })).statusCode).toBe(200);
    expect(lastCallImages()).toEqual([]);
    const otherApp = await createPublishedApp(t, tok, 'Other vision bot', visionGraph);
    expect((await completions({ appId: otherApp, chatId: 'borrowed', messages: [question('hello')] })).statusCode).toBe(200);
    await questionImageIs('borrowed', link);
    expect((await completions({ appId: otherApp, chatId: 'borrowed', messages: [question('and this?')] })).statusCode).toBe(200);
    expect(lastCallImages()).toEqual([]);

    // The source chat's own link, its signature changed: left out there too.
    const forged = link.replace(/token=([^&]+)/, (_all, token: string) => `token=${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`);
    await questionImageIs('photo-source', forged);
    expect((await completions({ appId: visionApp, chatId: 'photo-source', messages: [question('still there?')] })).statusCode).toBe(200);
    expect(lastCallImages()).toEqual([]);
  });

  it("is shown by the chat's window with a new link that reads it; another chat's link is shown as it is", async () => {
    expect((await completions({ appId: visionApp, chatId: 'window', messages: [question('keep this', SMALL)] })).statusCode).toBe(200);
    const link = await expiredLinkOf('window');
    await questionImageIs('window', link);
    const init = (chatId: string) => t.app.inject({ method: 'GET', url: `/api/core/chat/init?appId=${visionApp}&chatId=${chatId}`, headers: authHeaders(tok) });
    const shown = (body: string) => (JSON.parse(body).data.history as { obj: string; value: Value[] }[]).find((item) => item.obj === 'Human')!.value.find((v) => v.type === 'file')!.file!.url;

    const opened = await init('window');
    expect(opened.statusCode, opened.body).toBe(200);
    const renewed = shown(opened.body);
    expect(renewed).not.toBe(link);
    expect(renewed).toMatch(/^\/api\/common\/file\/read\?filename=image-1\.png&token=/);
    const read = await t.app.inject({ method: 'GET', url: renewed });
    expect(read.statusCode).toBe(200);
    expect(read.rawPayload.equals(PNG)).toBe(true);
    // The stored item is not rewritten: each window gets its own new link.
    expect(imageLinkOf((await humanItems('window'))[0] as never)).toBe(link);

    // The same expired link in another chat of the app: not this chat's file, so not renewed.
    expect((await completions({ appId: visionApp, chatId: 'window-neighbour', messages: [question('hello')] })).statusCode).toBe(200);
    await questionImageIs('window-neighbour', link);
    expect(shown((await init('window-neighbour')).body)).toBe(link);
    // A link a day from expiring is renewed too; a fresh one is shown as it is.
    const [file] = await chatFiles('window');
    const claims = { bucketName: 'chat' as const, teamId: String(file!.metadata.teamId), tmbId: String(file!.metadata.tmbId), fileId: file!._id.toHexString() };
    const nearlyDue = fileReadUrl(signFileToken(t.app.config.FILE_TOKEN_KEY, claims, Date.now() - 6.5 * DAY), 'image-1.png');
    await questionImageIs('window', nearlyDue);
    expect(shown((await init('window')).body)).not.toBe(nearlyDue);
    const fresh = fileReadUrl(signFileToken(t.app.config.FILE_TOKEN_KEY, claims, Date.now() - DAY), 'image-1.png');
    await questionImageIs('window', fresh);
    expect(shown((await init('window')).body)).toBe(fresh);
  });
});

describe('the tools (agent) node with the vision switch', () => {
  /** The vision chat graph with its AI chat node replaced by an agent (no tools attached), vision on or off. */
  const agentGraph = (vision: boolean) => ({
    ...visionGraph,
    nodes: visionGraph.nodes.map((node) =>
      node.nodeId === 'ai' ? { ...node, flowNodeType: 'tools', inputs: [...node.inputs.filter((input) => input.key !== 'aiChatVision'), { key: 'aiChatVision', value: vision }] } : node,
    ),
  });
  const lastCallTexts = () =>
    (fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!.body as { messages: { role: string; content: unknown }[] }).messages.map((m) =>
      typeof m.content === 'string' ? m.content : (m.content as { type: string; text?: string }[]).flatMap((p) => (p.type === 'text' ? [p.text] : [])).join(''),
    );

  it("sends the question's image, then the history's in later turns, with their messages' text", async () => {
    const agent = await createPublishedApp(t, tok, 'Vision agent', agentGraph(true));
    expect((await completions({ appId: agent, chatId: 'agent-photo', messages: [question('what is this?', SMALL)] })).statusCode).toBe(200);
    expect(lastCallImages()).toEqual([SMALL]);
    expect(lastCallTexts().at(-1)).toBe('what is this?');

    const next = await completions({ appId: agent, chatId: 'agent-photo', messages: [question('and its colour?')], detail: true });
    expect(next.statusCode, next.body).toBe(200);
    expect(lastCallImages()).toEqual([SMALL]);
    expect(lastCallTexts().slice(-3)).toEqual(['what is this?', 'a photo', 'and its colour?']);
    // The run detail shows the conversation's text (the image-bearing message included), not data URLs.
    const detail = (next.json().responseData as { moduleType: string; historyPreview: { obj: string; value: string }[] }[]).find((r) => r.moduleType === 'tools')!;
    expect(detail.historyPreview.map((m) => m.value)).toContain('what is this?');
    expect(JSON.stringify(detail)).not.toContain('base64');
  });

  it('sends no image with the switch off', async () => {
    const agent = await createPublishedApp(t, tok, 'Blind agent', agentGraph(false));
    expect((await completions({ appId: agent, chatId: 'agent-blind', messages: [question('what is this?', SMALL)] })).statusCode).toBe(200);
    expect(lastCallImages()).toEqual([]);
  });
});
