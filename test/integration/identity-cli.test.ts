import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPlatformCommand } from '../../src/cli/platform-commands.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { apiKeyHeaders, authHeaders, createApiKey, createUser, login } from '../helpers/platform.js';

const run = promisify(execFile);
let t: TestApp;

/** Runs the real admin CLI process against the test database. */
async function cli(...args: string[]): Promise<{ code: number; json?: Record<string, string>; stderr: string }> {
  try {
    const { stdout, stderr } = await run('node', ['--import', 'tsx', 'src/cli.ts', ...args], {
      env: { ...process.env, MONGODB_URI: t.config.MONGODB_URI, NODE_ENV: 'test', LOG_LEVEL: 'silent' },
      timeout: 60_000,
    });
    return { code: 0, json: JSON.parse(stdout), stderr };
  } catch (error) {
    const failed = error as { code?: number; stderr?: string };
    return { code: failed.code ?? 1, stderr: failed.stderr ?? '' };
  }
}

beforeAll(async () => {
  t = await buildTestApp();
});

afterAll(async () => {
  await t.close();
});

describe('admin CLI (real process)', () => {
  it('creates a user with a team, adds a member, resets a password, and refuses bad input', async () => {
    const created = await cli('user', 'create', '--username', 'cli-owner', '--password', 'cli-pass-1');
    expect(created.code).toBe(0);
    expect(Object.keys(created.json ?? {}).sort()).toEqual(['teamId', 'tmbId', 'userId']);
    const teamId = created.json?.teamId as string;

    const duplicate = await cli('user', 'create', '--username', 'cli-owner', '--password', 'cli-pass-1');
    expect(duplicate.code).not.toBe(0);
    expect(duplicate.stderr).toContain('already exists');

    // The process (src/cli.ts) only hands its arguments to the command code of their group and
    // prints its answer, as the starts here show for a success and a refusal of the user group and
    // a success of the team group: the other commands run that same code in process, sharing
    // nothing with the app but the database (each process start is seconds).
    const context = { config: t.config, db: t.app.mongo.db };
    const command = (...args: string[]) => runPlatformCommand(args, context) as Promise<Record<string, string>>;
    const joined = await command('user', 'create', '--username', 'cli-member', '--password', 'cli-pass-2', '--team', teamId, '--role', 'member', '--permission', '6');
    expect(joined.teamId).toBe(teamId);

    const solo = await command('user', 'create', '--username', 'cli-solo', '--password', 'cli-pass-3');
    const added = await cli('team', 'add-member', '--team', teamId, '--username', 'cli-solo', '--role', 'admin');
    expect(added.code).toBe(0);
    expect(added.json?.tmbId).toMatch(/^[0-9a-f]{24}$/);
    // The solo user keeps their own default team.
    const soloToken = await login(t, 'cli-solo', 'cli-pass-3');
    const soloMe = (await t.app.inject({ method: 'GET', url: '/api/support/user/account/tokenLogin', headers: authHeaders(soloToken) })).json().data;
    expect(soloMe.team.teamId).toBe(solo.teamId);

    const memberToken = await login(t, 'cli-member', 'cli-pass-2');
    const memberMe = (await t.app.inject({ method: 'GET', url: '/api/support/user/account/tokenLogin', headers: authHeaders(memberToken) })).json().data;
    expect(memberMe.team).toMatchObject({ teamId, role: 'member', permission: { value: 6, hasWritePer: true, hasManagePer: false } });

    await command('user', 'reset-password', '--username', 'cli-member', '--password', 'cli-pass-new');
    expect((await t.app.inject({ method: 'GET', url: '/api/support/user/account/tokenLogin', headers: authHeaders(memberToken) })).statusCode).toBe(401);
    expect(await login(t, 'cli-member', 'cli-pass-new')).toBeTruthy();

    // The remaining refusals.
    await expect(runPlatformCommand(['team', 'add-member', '--team', teamId, '--username', 'cli-solo', '--role', 'boss'], context)).rejects.toThrow('--role');
    await expect(runPlatformCommand(['user', 'create', '--username', 'x'], context)).rejects.toThrow('--password');
    await expect(runPlatformCommand(['user', 'create', '--username', 'x', '--password', 'long-enough', '--role', 'admin'], context)).rejects.toThrow('--team');
    await expect(runPlatformCommand(['user', 'create', '--username', 'x', '--password', 'short'], context)).rejects.toThrow('password');
    await expect(runPlatformCommand(['user', 'delete', '--username', 'x'], context)).rejects.toThrow('unknown command');
    await expect(runPlatformCommand(['team', 'add-member', '--team', new ObjectId().toHexString(), '--username', 'cli-solo', '--role', 'member'], context)).rejects.toThrow('not found');
    await expect(runPlatformCommand(['user', 'reset-password', '--username', 'nobody', '--password', 'long-enough'], context)).rejects.toThrow('not found');
  }, 120_000);
});

describe('end to end: a CLI user logs in, uses an API key, sees it expire, and cannot touch another team', () => {
  it('works through HTTP', async () => {
    const owner = await cli('user', 'create', '--username', 'e2e-a', '--password', 'e2e-pass-a');
    await createUser(t, { username: 'e2e-b', password: 'e2e-pass-b' });
    const tokenA = await login(t, 'e2e-a', 'e2e-pass-a');
    const tokenB = await login(t, 'e2e-b', 'e2e-pass-b');
    const teamA = owner.json?.teamId as string;
    const datasetId = new ObjectId();
    await t.app.mongo.db.collection('datasets').insertOne({
      _id: datasetId,
      teamId: new ObjectId(teamA),
      tmbId: new ObjectId(owner.json?.tmbId),
      parentId: null,
      type: 'dataset',
      name: 'docs',
      vectorModel: 'local-lexical-v1',
      agentModel: 'gpt-4o-mini',
      defaultPermission: 0,
      inheritPermission: true,
    });

    const start = Date.now();
    const key = await createApiKey(t, tokenA, { name: 'e2e', limit: { expiredTime: new Date(start + 60_000).toISOString(), maxUsagePoints: -1 } });
    const usage = await t.app.inject({
      method: 'POST',
      url: '/api/support/wallet/usage/createTrainingUsage',
      headers: apiKeyHeaders(key),
      payload: { name: 'import docs', datasetId: datasetId.toHexString() },
    });
    expect(usage.statusCode).toBe(200);
    const billId = usage.json().data as string;
    const bill = await t.app.mongo.db.collection('usages').findOne({ _id: new ObjectId(billId) });
    expect(bill).toMatchObject({ appName: 'import docs', source: 'training', totalPoints: 0, teamId: new ObjectId(teamA) });
    expect(bill?.list.map((item: { model: string }) => item.model)).toEqual(['Local lexical (hashed n-grams)', 'gpt-4o-mini', 'gpt-4o-mini']);

    // Any name, as the reference: an empty one is recorded empty, a long one cut.
    for (const [name, recorded] of [['', ''], ['n'.repeat(500), 'n'.repeat(200)]] as const) {
      const unnamed = await t.app.inject({ method: 'POST', url: '/api/support/wallet/usage/createTrainingUsage', headers: apiKeyHeaders(key), payload: { name, datasetId: datasetId.toHexString() } });
      expect(unnamed.statusCode, unnamed.body).toBe(200);
      expect((await t.app.mongo.db.collection('usages').findOne({ _id: new ObjectId(unnamed.json().data as string) }))?.appName).toBe(recorded);
    }

    // Team B cannot bill team A's dataset, nor see or change A's key.
    const foreign = await t.app.inject({ method: 'POST', url: '/api/support/wallet/usage/createTrainingUsage', headers: authHeaders(tokenB), payload: { name: 'x', datasetId: datasetId.toHexString() } });
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json().statusText).toBe('unAuthDataset');
    const keysA = (await t.app.inject({ method: 'GET', url: '/api/support/openapi/list', headers: authHeaders(tokenA) })).json().data;
    const del = await t.app.inject({ method: 'DELETE', url: `/api/support/openapi/delete?id=${keysA[0]._id}`, headers: authHeaders(tokenB) });
    expect(del.statusCode).toBe(404);
    expect(await t.app.mongo.db.collection('usages').countDocuments()).toBe(3);

    // The key expires.
    const clock = t.app.identity.clock;
    clock.now = () => start + 120_000;
    try {
      const expired = await t.app.inject({ method: 'POST', url: '/api/support/wallet/usage/createTrainingUsage', headers: apiKeyHeaders(key), payload: { name: 'late', datasetId: datasetId.toHexString() } });
      expect(expired.statusCode).toBe(401);
      expect(expired.json().statusText).toBe('openapiUnAuth');
    } finally {
      clock.now = () => Date.now();
    }
    expect(await t.app.mongo.db.collection('usages').countDocuments()).toBe(3);
  }, 120_000);
});

describe('a user create that fails after the membership', () => {
  // Left behind, the membership of a user that never came into being stayed in the team, and
  // every retry (a new user id each time) added another.
  it('takes the membership back, and its retry leaves one member of a real user', async () => {
    const { teamId } = await createUser(t, { username: 'half-owner', password: 'half-pass-1' });
    const { teams, accounts } = t.app.identity;
    const setTeamPermission = teams.setTeamPermission;
    teams.setTeamPermission = async () => {
      teams.setTeamPermission = setTeamPermission;
      throw new Error('connection reset');
    };
    const input = { username: 'half-joiner', password: 'half-pass-2', teamId, role: 'member' as const, permission: 6 };
    await expect(accounts.createUser(input)).rejects.toThrow(/connection reset/);
    await accounts.createUser(input);
    const db = t.app.mongo.db;
    const members = await db.collection('team_members').find({ teamId: new ObjectId(teamId) }).toArray();
    const users = await db.collection('users').find({ _id: { $in: members.map((member) => member.userId) } }).toArray();
    expect(members).toHaveLength(2);
    expect(users.map((user) => user.username).sort()).toEqual(['half-joiner', 'half-owner']);
  });
});

describe('team limit endpoints and plan status', () => {
  it('answer with the reference shapes', async () => {
    const created = { json: await createUser(t, { username: 'limits-user', password: 'limits-pass' }) };
    const token = await login(t, 'limits-user', 'limits-pass');
    const get = (url: string) => t.app.inject({ method: 'GET', url: `/api${url}`, headers: authHeaders(token) });
    expect((await get('/support/user/team/limit/datasetSizeLimit?size=10')).json()).toEqual({ code: 200, statusText: '', message: '', data: null });
    expect((await get('/support/user/team/limit/datasetSizeLimit')).json().data).toBeNull();
    expect((await get('/support/user/team/limit/datasetSizeLimit?size=abc')).statusCode).toBe(400);
    await t.app.teamLimits.setPlan(created.json.teamId, { maxDatasetSize: 5 });
    const over = await get('/support/user/team/limit/datasetSizeLimit?size=6');
    expect(over.statusCode).toBe(403);
    expect(over.json()).toMatchObject({ code: 500003, statusText: 'datasetSizeNotEnough' });
    expect((await get('/support/user/team/limit/webSyncLimit')).json().data).toBeNull();
    expect((await get('/support/user/team/limit/exportDatasetLimit')).json().statusText).toBe('missingParams');
    expect((await get(`/support/user/team/limit/exportDatasetLimit?datasetId=${new ObjectId()}`)).json().statusText).toBe('unExistDataset');
    const plan = (await get('/support/user/team/plan/getTeamPlanStatus')).json().data;
    expect(plan).toMatchObject({ totalPoints: null, usedPoints: null, datasetMaxSize: 5, usedDatasetSize: 0 });
    expect((await t.app.inject({ method: 'GET', url: '/api/support/user/team/plan/getTeamPlanStatus' })).statusCode).toBe(401);
  }, 60_000);
});
