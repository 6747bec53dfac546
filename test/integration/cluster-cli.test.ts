import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { cli, fixture, login, postToken } from '../fixtures/cluster/helpers.js';

let t: TestApp;
const run = promisify(execFile);
const nodeCount = () => t.app.mongo.db.collection('cluster_nodes').countDocuments();
const podCount = () => t.app.mongo.db.collection('cluster_pods').countDocuments();

/** The real admin CLI process against this test's database. */
function realCli(args: string[]) {
  return run('npx', ['tsx', 'src/cli.ts', 'cluster', ...args], {
    cwd: process.cwd(),
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'silent', MONGODB_URI: t.config.MONGODB_URI, CLUSTER_JWT_SECRET: t.config.CLUSTER_JWT_SECRET },
  });
}

beforeAll(async () => {
  t = await buildTestApp();
});

afterAll(async () => {
  await t.close();
});

describe('cluster user add (password policy)', () => {
  it('creates an active account and prints it without the password hash', async () => {
    const result = await cli(t.app, ['user', 'add', '--username', 'ivan', '--email', 'ivan@example.com', '--password', 'Ivan-pass1']);
    expect(result).toMatchObject({ username: 'ivan', email: 'ivan@example.com', state: 'Active', uninitialized: false });
    expect(JSON.stringify(result)).not.toContain('scrypt');
    expect((await login(t.app, 'ivan', 'Ivan-pass1')).token_type).toBe('Bearer');
  });

  it.each([
    [['--username', 'x1', '--email', 'x1@example.com', '--password', 'Short1A'], /8 to 64 characters/],
    [['--username', 'x1', '--email', 'x1@example.com', '--password', `Aa1${'x'.repeat(62)}`], /8 to 64 characters/],
    [['--username', 'x1', '--email', 'x1@example.com', '--password', 'alllower1'], /uppercase letter/],
    [['--username', 'x1', '--email', 'x1@example.com', '--password', 'ALLUPPER1'], /lowercase letter/],
    [['--username', 'x1', '--email', 'x1@example.com', '--password', 'NoDigitsHere'], /one digit/],
    [['--username', 'Bad_Name', '--email', 'x1@example.com', '--password', 'Good-pass1'], /Invalid field 'username'/],
    [['--username', 'x1', '--email', 'not-an-email', '--password', 'Good-pass1'], /Invalid field 'email'/],
    [['--username', 'ivan', '--email', 'other@example.com', '--password', 'Good-pass1'], /cluster user "ivan" already exists/],
    [['--username', 'ivan2', '--email', 'ivan@example.com', '--password', 'Good-pass1'], /user email: ivan@example.com already exists/],
    [['--email', 'x1@example.com', '--password', 'Good-pass1'], /--username is required/],
  ])('refuses %j', async (args, message) => {
    await expect(cli(t.app, ['user', 'add', ...args])).rejects.toThrow(message);
    expect(await t.app.mongo.db.collection('cluster_users').countDocuments({ _id: { $in: ['x1', 'Bad_Name', 'ivan2'] } as never })).toBe(0);
  });
});

describe('cluster user disable / enable / reset-password', () => {
  it('disable and enable change the login outcome', async () => {
    expect(await cli(t.app, ['user', 'disable', 'ivan'])).toMatchObject({ state: 'Disabled' });
    const refused = await postToken(t.app, { grant_type: 'password', username: 'ivan', password: 'Ivan-pass1', client_id: 'kubesphere', client_secret: 'kubesphere' });
    expect(refused.json()).toEqual({ error: 'invalid_grant', error_description: 'account is not active' });
    expect(await cli(t.app, ['user', 'enable', 'ivan'])).toMatchObject({ state: 'Active' });
    expect((await login(t.app, 'ivan', 'Ivan-pass1')).expires_in).toBe(7200);
  });

  it('reset-password applies the policy, replaces the password and ends sessions; the admin loses "uninitialized"', async () => {
    await expect(cli(t.app, ['user', 'reset-password', '--username', 'admin', '--password', 'weak'])).rejects.toThrow(/8 to 64/);
    const session = await login(t.app);
    expect(await cli(t.app, ['user', 'reset-password', '--username', 'admin', '--password', 'New-admin-pass9'])).toMatchObject({ uninitialized: false });
    const old = await t.app.inject({ method: 'GET', url: '/kapis/resources.platform.io/v1alpha3/nodes', headers: { authorization: `Bearer ${session.access_token}` } });
    expect(old.statusCode).toBe(401);
    await expect(login(t.app)).rejects.toThrow(/400/);
    const fresh = await login(t.app, 'admin', 'New-admin-pass9');
    expect(JSON.parse(Buffer.from(fresh.access_token.split('.')[1] as string, 'base64url').toString()).extra).toBeUndefined();
  });

  it.each([
    [['user', 'disable', 'nobody'], /cluster user "nobody" not found/],
    [['user', 'enable'], /exactly one user name/],
    [['user', 'reset-password', '--username', 'nobody', '--password', 'Good-pass1'], /not found/],
    [['user', 'remove', 'ivan'], /unknown command/],
    [['nodes', 'import'], /exactly one file/],
    [['nodes', 'import', '--prune'], /exactly one file/],
    [['nodes', 'delete'], /exactly one node name/],
    [['user', 'disable', 'ivan', '--prune'], /--prune applies only to imports/],
  ])('fails clearly on %j', async (args, message) => {
    await expect(cli(t.app, args)).rejects.toThrow(message);
  });
});

describe('cluster nodes / pods import', () => {
  it('imports kubectl output and upserts on re-import', async () => {
    expect(await cli(t.app, ['nodes', 'import', fixture('nodes.json')])).toMatchObject({ kind: 'NodeList', created: 5, updated: 0 });
    expect(await cli(t.app, ['nodes', 'import', fixture('nodes.json')])).toMatchObject({ created: 0, updated: 5 });
    expect(await nodeCount()).toBe(5);
    expect(await cli(t.app, ['pods', 'import', fixture('pods.json')])).toMatchObject({ kind: 'PodList', created: 4, count: 4 });
    expect(await cli(t.app, ['pods', 'import', fixture('pods.json')])).toMatchObject({ created: 0, updated: 4 });
  });

  it('a broken node file names every problem and changes nothing', async () => {
    const error = await cli(t.app, ['nodes', 'import', fixture('nodes-broken.json')]).catch((caught: Error) => caught);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/nothing changed/);
    expect((error as Error).message).toMatch(/items\[1\]\.metadata\.name/);
    expect((error as Error).message).toMatch(/items\[2\]\.status\.allocatable\.cpu: must be a Kubernetes quantity/);
    expect(await nodeCount()).toBe(5);
    expect(await t.app.mongo.db.collection('cluster_nodes').findOne({ _id: 'good1' as never })).toBeNull();
  });

  it('a broken pod file changes nothing', async () => {
    await expect(cli(t.app, ['pods', 'import', fixture('pods-broken.json')])).rejects.toThrow(/items\[1\]\.spec\.containers\.0\.resources\.requests\.cpu: must be a Kubernetes quantity/);
    expect(await podCount()).toBe(4);
    expect(await t.app.mongo.db.collection('cluster_pods').findOne({ _id: 'default/ok-pod' as never })).toBeNull();
  });

  it.each([
    ['not-json.txt', /not valid JSON/],
    ['does-not-exist.json', /cannot read .*does-not-exist\.json: ENOENT/],
  ])('refuses %s', async (file, message) => {
    await expect(cli(t.app, ['nodes', 'import', fixture(file)])).rejects.toThrow(message);
  });

  it('refuses a pods file given as nodes', async () => {
    await expect(cli(t.app, ['nodes', 'import', fixture('pods.json')])).rejects.toThrow(/items\[0\]\.kind/);
    expect(await nodeCount()).toBe(5);
  });
});

describe('the real CLI process', () => {
  it('prints JSON and exits 0 on success', async () => {
    const { stdout } = await realCli(['user', 'add', '--username', 'judy', '--email', 'judy@example.com', '--password', 'Judy-pass1']);
    expect(JSON.parse(stdout)).toMatchObject({ username: 'judy', state: 'Active' });
    const imported = await realCli(['nodes', 'import', fixture('nodes.json')]);
    expect(JSON.parse(imported.stdout)).toMatchObject({ kind: 'NodeList', updated: 5 });
  });

  it('exits non-zero with a message on failure', async () => {
    const failure = await realCli(['nodes', 'import', fixture('nodes-broken.json')]).catch((error: { code: number; stderr: string }) => error);
    expect((failure as { code: number }).code).toBe(1);
    expect((failure as { stderr: string }).stderr).toMatch(/^error: the file was not imported, nothing changed/m);
  });
});
