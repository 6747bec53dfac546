import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  ['images', 'expiredTime'],
  ['dataset_data_changes', 'at'],
  ['buffer_tts', 'createTime'],
  ['dataset_training_claims', 'lockTime'],
  ['app_inserts', 'expiresAt'],
  ['cluster_tokens', 'expiresAt'],
  ['cluster_login_attempts', 'expiresAt'],
  ['cluster_login_records', 'createdAt'],
];

describe('indexes of the periodic cleanups', () => {
  it.each(CLEANUP_RANGES)('%s has an index led by %s', async (collection, field) => {
    const indexes = await t.app.mongo.db.collection(collection).indexes();
    expect(indexes.some((index) => Object.keys(index.key)[0] === field), JSON.stringify(indexes.map((index) => index.key))).toBe(true);
  });
});
