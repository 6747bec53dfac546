import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USAGE_RETENTION_MS } from '../../src/platform/identity/usage.repo.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * Every periodic cleanup deletes by a time range; on MongoDB an index on that field serves it,
 * where a missing one scans the whole collection (images and recordings with their bytes) at
 * each sweep. FerretDB has no TTL index, so these sweeps replace one everywhere.
 */
let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

const CLEANUP_RANGES: [collection: string, field: string][] = [
  ['user_sessions', 'expiresAt'],
  ['login_attempts', 'expiresAt'],
  ['outlink_qpm_slots', 'expiresAt'],
  ['outlink_channel_places', 'until'],
  ['images', 'expiredTime'],
  ['dataset_data_changes', 'at'],
  ['buffer_tts', 'createTime'],
  ['dataset_training_claims', 'lockTime'],
  ['app_inserts', 'expiresAt'],
  ['cluster_tokens', 'expiresAt'],
  ['cluster_login_attempts', 'expiresAt'],
  ['cluster_login_records', 'createdAt'],
  ['usages', 'time'],
];

describe('indexes of the periodic cleanups', () => {
  it.each(CLEANUP_RANGES)('%s has an index led by %s', async (collection, field) => {
    const indexes = await t.app.mongo.db.collection(collection).indexes();
    expect(indexes.some((index) => Object.keys(index.key)[0] === field), JSON.stringify(indexes.map((index) => index.key))).toBe(true);
  });
});

describe('usage record retention', () => {
  it('the sweep deletes records older than 180 days (the reference TTL) and keeps the rest', async () => {
    const usages = t.app.mongo.db.collection('usages');
    const day = 24 * 60 * 60 * 1000;
    const teamId = new ObjectId();
    const now = Date.now();
    await usages.insertMany([181, 179, 1].map((days) => ({ teamId, tmbId: new ObjectId(), source: 'api', appName: `${days} days old`, time: new Date(now - days * day), totalPoints: 0, list: [] })));
    expect(await t.app.identity.usage.deleteBefore(new Date(now - USAGE_RETENTION_MS))).toBe(1);
    expect((await usages.find({ teamId }).toArray()).map((r) => r.appName).sort()).toEqual(['1 days old', '179 days old']);
  });
});

describe('index builds at start-up', () => {
  it('go through a client of their own, not the one whose commands time out after two minutes', async () => {
    // A new index on a large production collection can take longer than the request client's
    // socketTimeoutMS: start-up failed on MongoDB and restarted until the server finished it.
    const onRequestClient: string[] = [];
    const own = await buildTestApp({}, (app) => {
      app.mongo.client.on('commandStarted', (event) => {
        if (event.commandName === 'createIndexes') onRequestClient.push(String(event.command.createIndexes));
      });
    });
    try {
      expect(onRequestClient).toEqual([]);
      const indexes = await own.app.mongo.db.collection('dataset_datas').indexes();
      expect(indexes.some((index) => JSON.stringify(index.key) === '{"datasetId":1}')).toBe(true);
    } finally {
      await own.close();
    }
  });
});
