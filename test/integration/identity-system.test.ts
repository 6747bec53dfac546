import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_LEXICAL_VECTOR_MODEL } from '../../src/domain/models.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser } from '../helpers/platform.js';

let t: TestApp;
const configDir = mkdtempSync(join(tmpdir(), 'models-'));
const configPath = join(configDir, 'config.json');

beforeAll(async () => {
  writeFileSync(
    configPath,
    `{
  // comments are allowed, as in the reference's config.json
  "feConfigs": { "systemTitle": "My Platform" },
  "llmModels": [{ "model": "m-1", "name": "Model One", "maxContext": 8000, "maxResponse": 1000, "quoteMaxToken": 4000,
                  "requestUrl": "http://llm.local/v1", "requestAuth": "sk-secret-llm" }],
  "reRankModels": [{ "model": "rr", "name": "Rerank", "requestUrl": "http://rerank.local", "requestAuth": "sk-secret-rr" }],
}`,
  );
  t = await buildTestApp({ MODEL_CONFIG_PATH: configPath, PLAN_MAX_APPS: '3', PLAN_EXPORT_INTERVAL_MINUTES: '30' });
});

afterAll(async () => {
  await t.close();
});

describe('getInitData and models', () => {
  it('is public and blanks every requestAuth', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/common/system/getInitData' });
    expect(response.statusCode).toBe(200);
    const data = response.json().data;
    expect(data.feConfigs).toMatchObject({ systemTitle: 'My Platform', isPlus: false, limit: { exportDatasetLimitMinutes: 30 } });
    expect(data.llmModels).toEqual([expect.objectContaining({ model: 'm-1', requestUrl: '', requestAuth: '' })]);
    expect(data.reRankModels).toEqual([expect.objectContaining({ model: 'rr', requestUrl: '', requestAuth: '' })]);
    expect(data.vectorModels.map((m: { model: string }) => m.model)).toContain(LOCAL_LEXICAL_VECTOR_MODEL);
    expect(data.systemVersion).toBe(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version);
    expect(response.body).not.toContain('sk-secret');
    expect(response.body).not.toContain('llm.local');
  });

  it('serves the registry to other modules', () => {
    const models = t.app.models;
    expect(models.getLLMModel('Model One')?.model).toBe('m-1');
    expect(models.getLLMModel('m-1')?.requestAuth).toBe('sk-secret-llm');
    expect(models.defaultVectorModel()).toMatchObject({ model: LOCAL_LEXICAL_VECTOR_MODEL, provider: 'local-lexical', dimensions: 256 });
  });

  it('answers unknown fnApi paths with a clear 404 envelope', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/fnApi/some/function' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 404, statusText: 'notFound', data: null });
    expect(response.json().message).toContain('some/function');
  });
});

describe('team limits', () => {
  it('applies env defaults, per-team plan overrides, and counts apps and datasets of the team', async () => {
    const { teamId } = await createUser(t, { username: 'limits-a', password: 'limits-pass' });
    const other = await createUser(t, { username: 'limits-b', password: 'limits-pass' });
    const teamLimits = t.app.teamLimits;
    expect(await teamLimits.getLimits(teamId)).toMatchObject({ maxApps: 3, exportIntervalMinutes: 30 });
    const apps = t.app.mongo.db.collection('apps');
    await apps.insertMany([
      { teamId: new ObjectId(teamId), type: 'simple' },
      { teamId: new ObjectId(teamId), type: 'advanced' },
      { teamId: new ObjectId(teamId), type: 'folder' },
      { teamId: new ObjectId(other.teamId), type: 'simple' },
    ]);
    await expect(teamLimits.assertAppAmount(teamId, 1)).resolves.toBeUndefined();
    await expect(teamLimits.assertAppAmount(teamId, 2)).rejects.toMatchObject({ statusText: 'appAmountNotEnough', code: 500005 });
    await teamLimits.setPlan(teamId, { maxApps: 10, maxDatasetSize: 5 });
    await expect(teamLimits.assertAppAmount(teamId, 2)).resolves.toBeUndefined();
    await expect(teamLimits.assertDatasetSize(teamId, 6)).rejects.toMatchObject({ statusText: 'datasetSizeNotEnough' });
    await expect(teamLimits.assertDatasetSize(teamId, 5)).resolves.toBeUndefined();
    expect((await teamLimits.getLimits(other.teamId)).maxApps).toBe(3);
  });

  it('records exports and refuses another inside the interval until the clock moves on', async () => {
    const { teamId } = await createUser(t, { username: 'limits-c', password: 'limits-pass' });
    const teamLimits = t.app.teamLimits;
const clock = t.app.identity.clock;
    const start = Date.now();
    clock.now = () => start;
    try {
      await teamLimits.checkExport(teamId);
      await teamLimits.assertAndRecordExport(teamId);
      await expect(teamLimits.checkExport(teamId)).rejects.toMatchObject({ httpStatus: 429 });
      await expect(teamLimits.assertAndRecordExport(teamId)).rejects.toMatchObject({ httpStatus: 429 });
      clock.now = () => start + 31 * 60_000;
      await expect(teamLimits.assertAndRecordExport(teamId)).resolves.toBeUndefined();
      // Web sync has no interval by default.
      await teamLimits.assertAndRecordWebSync(teamId);
      await teamLimits.assertAndRecordWebSync(teamId);
    } finally {
      clock.now = () => Date.now();
    }
  });
});
