import { type CommandStartedEvent, type CommandSucceededEvent, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMongo, type Mongo } from '../../src/infra/mongo.js';
import { createChatLogsRepo } from '../../src/platform/chat/chat-logs.repo.js';
import { freshDatabaseUri } from '../helpers/app.js';

/**
 * The app log page (chat-logs.repo.ts) counts each chat's messages and feedbacks in the
 * database: it reads no item of the page's chats, only a few small counting documents per chat.
 * It read every item (50 per chat, their feedback texts and annotations included) before.
 */
let mongo: Mongo;

beforeAll(() => {
  // The test URI asks for command events (monitorCommands).
  mongo = createMongo(freshDatabaseUri());
});
afterAll(async () => {
  await mongo.db.dropDatabase().catch(() => undefined);
  await mongo.client.close();
});

const teamId = new ObjectId();
const appId = new ObjectId();
const CHATS = 20;
const ITEMS_PER_CHAT = 50;
/** In every item's content and feedback text: a reply that carries it read an item. */
const SECRET = 'secret-item-text';

/** Item `i` of chat `c`: every kind of feedback field, set, unset and empty, in turn. */
function item(c: number, i: number): Record<string, unknown> {
  const doc: Record<string, unknown> = {
    _id: new ObjectId(),
    teamId,
    appId,
    chatId: `chat-${c}`,
    dataId: `d-${c}-${i}`,
    obj: i % 2 ? 'AI' : 'Human',
    time: new Date(1_700_000_000_000 + i),
    value: [{ type: 'text', text: { content: `${SECRET} ${'x'.repeat(200)}` } }],
  };
  const kind = i % 10;
  if (kind === 1) doc.userGoodFeedback = 'yes';
  // Set though empty: the reference's `$ifNull` counts it.
  if (kind === 2) doc.userGoodFeedback = '';
  if (kind === 3) doc.userBadFeedback = `${SECRET} too slow`;
  if (kind === 4) doc.userBadFeedback = null;
  if (c % 4 === 0) {
    if (kind === 5) doc.customFeedbacks = [`${SECRET} plugin note`];
    // An empty list (a closed feedback) and a list of another shape do not count.
    if (kind === 6) doc.customFeedbacks = [];
    if (kind === 7) doc.customFeedbacks = [null];
    if (kind === 8) doc.customFeedbacks = 'not a list';
  }
  if (kind === 9) doc.adminFeedback = { datasetId: 'ds', dataId: 'x', q: `${SECRET} question`, a: `${SECRET} answer` };
  return doc;
}

const isSet = (value: unknown) => value !== undefined && value !== null;

/** The counts the page shows for chat `c`, worked out from its items as written. */
function expectedCounts(c: number) {
  const docs = Array.from({ length: ITEMS_PER_CHAT }, (_, i) => item(c, i));
  const counted = (test: (doc: Record<string, unknown>) => boolean) => docs.filter(test).length;
  return {
    messageCount: docs.length,
    userGoodFeedbackCount: counted((doc) => isSet(doc.userGoodFeedback)),
    userBadFeedbackCount: counted((doc) => isSet(doc.userBadFeedback)),
    customFeedbacksCount: counted((doc) => Array.isArray(doc.customFeedbacks) && doc.customFeedbacks.length > 0),
    markCount: counted((doc) => isSet(doc.adminFeedback)),
  };
}

/** The commands sent on `chatitems` while `run` runs, and what their replies carried. */
async function itemReadsDuring(run: () => Promise<unknown>) {
  const commands: string[] = [];
  const replies: unknown[] = [];
  const requestIds = new Set<number>();
  const started = (event: CommandStartedEvent) => {
    if (event.command[event.commandName] !== 'chatitems') return;
    commands.push(event.commandName);
    requestIds.add(event.requestId);
  };
  const succeeded = (event: CommandSucceededEvent) => {
    if (requestIds.has(event.requestId)) replies.push(event.reply);
  };
  mongo.client.on('commandStarted', started);
  mongo.client.on('commandSucceeded', succeeded);
  try {
    await run();
  } finally {
    mongo.client.off('commandStarted', started);
    mongo.client.off('commandSucceeded', succeeded);
  }
  const documents = replies.reduce<number>((sum, reply) => sum + ((reply as { cursor?: { firstBatch?: unknown[] } }).cursor?.firstBatch?.length ?? 0), 0);
  return { commands, documents, text: JSON.stringify(replies) };
}

const now = Date.now();
const repo = () => createChatLogsRepo(mongo.db);
const readPage = () => repo().page({ teamId: teamId.toHexString(), appId: appId.toHexString(), from: new Date(0), to: new Date(now + 1000), skip: 0, limit: CHATS });

describe('the app log page’s counts', () => {
  beforeAll(async () => {
    await mongo.db.collection('chats').insertMany(
      Array.from({ length: CHATS }, (_, c) => ({ teamId, appId, chatId: `chat-${c}`, title: `chat ${c}`, source: 'online', updateTime: new Date(now - c * 1000) })),
    );
    await mongo.db.collection('chatitems').insertMany(Array.from({ length: CHATS * ITEMS_PER_CHAT }, (_, n) => item(Math.floor(n / ITEMS_PER_CHAT), n % ITEMS_PER_CHAT)));
    // Another team's item under a chat id of the page is not counted.
    await mongo.db.collection('chatitems').insertOne({ teamId: new ObjectId(), appId, chatId: 'chat-0', userGoodFeedback: 'other team' });
  });

  it('read no item for a page of 20 chats of 50 items each: a few counting documents per chat', async () => {
    const reads = await itemReadsDuring(readPage);
    // One grouping per chat, and a count of non-empty custom feedback lists for the 5 chats that
    // hold lists; what comes back is a few counting documents per chat, never an item's text.
    const chatsWithLists = CHATS / 4;
    expect(reads.commands).toEqual(Array(CHATS + chatsWithLists).fill('aggregate'));
    expect(reads.documents).toBeLessThanOrEqual(CHATS * 8 + chatsWithLists);
    expect(reads.text).not.toContain(SECRET);
  });

  it('count each chat’s items, feedbacks set, non-empty custom feedback lists and annotations', async () => {
    const page = await readPage();
    expect(page.total).toBe(CHATS);
    expect(page.list.map((chat) => chat.id)).toEqual(Array.from({ length: CHATS }, (_, c) => `chat-${c}`));
    for (const [c, chat] of page.list.entries()) expect(chat, chat.id).toMatchObject(expectedCounts(c));
    expect(page.list[0]).toMatchObject({ messageCount: 50, userGoodFeedbackCount: 10, userBadFeedbackCount: 5, customFeedbacksCount: 10, markCount: 5 });
    expect(page.list[1]).toMatchObject({ customFeedbacksCount: 0 });
  });
});
