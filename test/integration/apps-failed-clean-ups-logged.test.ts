/**
 * Clean-ups of the apps module that run after a failure (taking back an insert, closing its
 * record, giving plan room back, taking back a half-made HTTP plugin) were swallowed without a
 * word: what they left behind was found by nobody. Each is now logged as a warning naming what
 * it left, by id (no secrets).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser, login } from '../helpers/platform.js';
import { call, ok, simpleNodes } from './apps-helpers.js';
import { failsOnce, outage } from '../helpers/forced-failures.js';

let t: TestApp;
let token: string;
let teamId: string;

beforeAll(async () => {
  t = await buildTestApp();
  const user = await createUser(t, { username: 'clean-ups-logged', password: 'password-clean-1' });
  teamId = user.teamId;
  token = await login(t, 'clean-ups-logged', 'password-clean-1');
});
afterAll(() => t.close());

/** The warnings written while `run` ran. */
async function warningsDuring(run: () => Promise<unknown>): Promise<string[]> {
  const from = t.logs().length;
  await run();
  return t
    .logs()
    .slice(from)
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((line) => line.level === 40)
    .map((line) => line.msg);
}

const createApp = (name: string) => call(t, token, 'POST', '/core/app/create', { name, type: 'simple', modules: simpleNodes, edges: [] });
const deps = () => t.app.apps.deps;
const warnedOf = (warnings: string[], text: string) => warnings.filter((msg) => msg.includes(text));

describe('failed clean-ups of the apps module are logged', () => {
  it('an insert whose take-back fails (its app landed, then a step failed): the app and team', async () => {
    let appId = '';
    const insert = deps().apps.insert;
    deps().apps.insert = async (doc) => {
      deps().apps.insert = insert;
      appId = doc._id;
      await insert(doc);
      throw outage();
    };
    // Taking it back closes its insert record first: that fails too.
    failsOnce(deps().inserts, 'close');
    const warnings = await warningsDuring(async () => expect((await createApp('take-back fails')).status).toBeGreaterThanOrEqual(500));
    expect(warnedOf(warnings, appId)).toEqual([expect.stringMatching(new RegExp(`^app ${appId} of team ${teamId}: taking back a failed insert failed, left to the insert sweep: MongoNetworkError`))]);
  });

  it('an insert record that could not be closed after the app landed: the app, which is kept', async () => {
    failsOnce(deps().inserts, 'close');
    let appId = '';
    const warnings = await warningsDuring(async () => {
      appId = await ok(t, token, 'POST', '/core/app/create', { name: 'record kept', type: 'simple', modules: simpleNodes, edges: [] });
    });
    expect(warnedOf(warnings, appId)).toEqual([`app ${appId} of team ${teamId}: closing its insert record failed, left to the insert sweep (the app is kept): MongoNetworkError: connection reset`]);
  });

  it('plan room that could not be given back after an insert failed to start: the team and the count', async () => {
    failsOnce(deps().inserts, 'open');
    failsOnce(deps().teamLimits, 'releaseApps');
    const warnings = await warningsDuring(async () => expect((await createApp('never opened')).status).toBeGreaterThanOrEqual(500));
    expect(warnedOf(warnings, teamId)).toEqual([`team ${teamId}: giving back room for 1 app(s) failed, counted until the next recount: MongoNetworkError: connection reset`]);
  });

  it('a half-made HTTP plugin that could not be taken back, and the room it reserved: the plugin, the team', async () => {
    const schema = JSON.stringify({ openapi: '3.0.0', servers: [{ url: 'https://api.example.com' }], paths: { '/a': { get: { operationId: 'getA' } }, '/b': { get: { operationId: 'getB' } } } });
    let containerId = '';
    const insert = deps().apps.insert;
    // The container lands; its first child fails; taking the container back fails; so does giving the room back.
    deps().apps.insert = async (doc) => {
      containerId = doc._id;
      deps().apps.insert = async () => {
        deps().apps.insert = insert;
        throw outage();
      };
      return insert(doc);
    };
    failsOnce(deps().apps, 'teamTree');
    failsOnce(deps().teamLimits, 'releaseApps');
    const warnings = await warningsDuring(async () =>
      expect((await call(t, token, 'POST', '/core/app/httpPlugin/create', { name: 'half made', pluginData: { apiSchemaStr: schema, customHeaders: '{"Authorization":"Bearer s3cret-token"}' } })).status).toBeGreaterThanOrEqual(500),
    );
    expect(warnings.filter((msg) => msg.includes(containerId) || msg.includes(teamId))).toEqual([
      `HTTP plugin ${containerId} of team ${teamId} created before a failure and kept: MongoNetworkError: connection reset`,
      `team ${teamId}: giving back room for 2 app(s) failed, counted until the next recount: MongoNetworkError: connection reset`,
    ]);
    // The plugin's headers (credentials of the API it calls) are not logged.
    expect(warnings.join('\n')).not.toContain('s3cret-token');
  });
});
