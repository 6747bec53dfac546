import { type CommandStartedEvent, type CommandSucceededEvent, MongoClient, ObjectId } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { selfCallHeaders } from '../../src/infra/self-call-token.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/** Resolves with the `n` (items matched) of the next update of chat items to succeed. */
function nextChatItemUpdate(t: TestApp): Promise<number> {
  const client = t.app.mongo.client;
  const ids = new Set<number>();
  return new Promise((resolve) => {
    const started = (event: CommandStartedEvent) => {
      if (event.commandName === 'update' && event.command.update === 'chatitems') ids.add(event.requestId);
    };
    const succeeded = (event: CommandSucceededEvent) => {
      if (!ids.has(event.requestId)) return;
      client.off('commandStarted', started).off('commandSucceeded', succeeded);
      resolve((event.reply as { n: number }).n);
    };
    client.on('commandStarted', started).on('commandSucceeded', succeeded);
  });
}

describe('customFeedback retries at close', () => {
  it('a retry still waiting when the app closes is made before the database client closes', async () => {
    const t = await buildTestApp();
    const reader = new MongoClient(t.config.MONGODB_URI);
    try {
      const teamId = new ObjectId();
      const appId = new ObjectId();
      const firstAttempt = nextChatItemUpdate(t);
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/plugins/customFeedback/v2/index',
        headers: selfCallHeaders(t.config.TOKEN_KEY, { teamId: teamId.toHexString(), appId: appId.toHexString(), chatId: 'late-chat', dataId: 'late-item' }),
        payload: { appId: appId.toHexString(), chatId: 'late-chat', responseChatItemId: 'late-item', customFeedback: 'kept' },
      });
      expect(response.json()).toEqual({ text: 'kept' });
      // The answer item did not exist yet: the plugin now waits 60 s to try again.
      expect(await firstAttempt).toBe(0);
      await t.app.mongo.db.collection('chatitems').insertOne({ teamId, appId, chatId: 'late-chat', dataId: 'late-item', customFeedbacks: [] });

      await t.app.close();

      expect(t.logs()).not.toContain('custom feedback not saved');
      const item = await reader.db().collection('chatitems').findOne({ chatId: 'late-chat' });
      expect(item?.customFeedbacks).toEqual(['kept']);
    } finally {
      await reader.db().dropDatabase().catch(() => undefined);
      await reader.close();
    }
  });

  it('a retry whose answer item never came is given up at close, quietly', async () => {
    const t = await buildTestApp();
    const firstAttempt = nextChatItemUpdate(t);
    const scope = { teamId: new ObjectId().toHexString(), appId: new ObjectId().toHexString(), chatId: 'no-chat', dataId: 'no-item' };
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/plugins/customFeedback/index',
      headers: selfCallHeaders(t.config.TOKEN_KEY, scope),
      payload: { appId: scope.appId, chatId: scope.chatId, responseChatItemId: scope.dataId, customFeedback: 'lost' },
    });
    expect(response.statusCode).toBe(200);
    expect(await firstAttempt).toBe(0);
    const retryAtClose = nextChatItemUpdate(t);
    await expect(t.close()).resolves.toBeUndefined();
    // Made during close (already settled now), not 60 s later.
    expect(await Promise.race([retryAtClose, 'not tried'])).toBe(0);
    expect(t.logs()).not.toContain('custom feedback not saved');
  });
});
