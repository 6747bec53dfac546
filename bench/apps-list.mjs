// POST /api/core/app/list for a team with 10,000 apps in 100 folders, called by a plain member
// who collaborates (read) on half of the folders, against a bare Fastify route running the same
// queries (apps page + the member's permission rows) without auth, validation or permission logic.
// Users come from the real admin CLI; folders and collaborators through the real HTTP routes;
// the 10,000 apps are inserted in bulk in the stored shape of src/platform/apps/apps.repo.ts.
import { execFileSync } from 'node:child_process';
import { ObjectId } from 'mongodb';
import { BENCH_SECRETS, benchSeconds, measure, report, startBaselineProcess, startBenchEnvironment } from './lib.mjs';

// Built by startBenchEnvironment; imported after it, as the bulk insert below bypasses the service.
const stampsModule = () => import('../dist/infra/version-stamps.js');
const readModelModule = () => import('../dist/platform/apps/app-list.read-model.js');

// FerretDB (SQLite) scans the collection for every query: few connections, longer runs.
const duration = benchSeconds(15);
const connections = Number(process.env.BENCH_CONNECTIONS) || 2;
const FOLDERS = 100;
const APPS_PER_FOLDER = 100;

function cli(mongoUri, args) {
  const out = execFileSync(process.execPath, ['dist/cli.js', ...args], {
    env: { ...process.env, ...BENCH_SECRETS, NODE_ENV: 'production', CLUSTER_ADMIN_PASSWORD: 'P@88w0rd', MONGODB_URI: mongoUri },
    stdio: ['ignore', 'pipe', 'inherit'],
  }).toString();
  return JSON.parse(out.slice(out.indexOf('{')));
}

async function api(env, token, path, body) {
  const response = await fetch(`${env.url}/api${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { token } : {}) }, body: JSON.stringify(body) });
  const json = await response.json();
  if (json.code !== 200) throw new Error(`${path}: ${JSON.stringify(json)}`);
  return json.data;
}

const env = await startBenchEnvironment({ env: { CLUSTER_REGISTER_HOST_NODE: 'false', TRAINING_WORKER: 'false', PLAN_MAX_APPS: '100000' } });
try {
  const owner = cli(env.mongoUri, ['user', 'create', '--username', 'bench-owner', '--password', 'bench-password-1']);
  const member = cli(env.mongoUri, ['user', 'create', '--username', 'bench-member', '--password', 'bench-password-1', '--team', owner.teamId, '--role', 'member', '--permission', '4']);
  const ownerToken = (await api(env, null, '/support/user/account/loginByPassword', { username: 'bench-owner', password: 'bench-password-1' })).token;
  const memberToken = (await api(env, null, '/support/user/account/loginByPassword', { username: 'bench-member', password: 'bench-password-1' })).token;

  const started = Date.now();
  for (let i = 0; i < FOLDERS; i++) await api(env, ownerToken, '/core/app/folder/create', { name: `folder ${String(i).padStart(3, '0')}` });
  const folders = (await api(env, ownerToken, '/core/app/list', { parentId: null, type: 'folder' })).map((f) => f._id).sort();
  for (const folder of folders.slice(0, FOLDERS / 2)) await api(env, ownerToken, '/core/app/collaborator/update', { appId: folder, tmbIds: [member.tmbId], permission: 4 });
  const apps = [];
  const base = Date.now();
  for (const [f, folder] of folders.entries()) {
    for (let i = 0; i < APPS_PER_FOLDER; i++) {
      apps.push({
        _id: new ObjectId(),
        parentId: new ObjectId(folder),
        teamId: new ObjectId(owner.teamId),
        tmbId: new ObjectId(owner.tmbId),
        name: `app ${f}-${i}`,
        type: i % 3 === 0 ? 'advanced' : 'simple',
        version: 'v2',
        avatar: '/icon/logo.svg',
        intro: `intro of app ${f}-${i}`,
        updateTime: new Date(base - (f * APPS_PER_FOLDER + i) * 1000),
        teamTags: [],
        modulesJson: '[]',
        edgesJson: '[]',
        pluginData: { nodeVersion: '481' },
        defaultPermission: 0,
        inheritPermission: true,
      });
    }
  }
  await env.db.collection('apps').insertMany(apps, { ordered: false });
  // Written behind the service's back: move the team's app list stamp as the service's writes do.
  const [{ createVersionStamps }, { appListStampKey }] = await Promise.all([stampsModule(), readModelModule()]);
  await createVersionStamps(env.db, { leaseMs: 0 }).bump(appListStampKey(owner.teamId));
  console.log(`seeded ${FOLDERS} folders and ${apps.length} apps in ${Date.now() - started} ms`);

  const readable = folders[0];
  const baseline = await startBaselineProcess('bench/baselines/apps-list.mjs', { mongoUri: env.mongoUri, teamId: owner.teamId, tmbId: member.tmbId });
  try {
    for (const [label, body] of [
      ['POST /api/core/app/list (folder, 100 apps)', { parentId: readable }],
      ['POST /api/core/app/list (whole team, first 1000)', {}],
    ]) {
      const check = await api(env, memberToken, '/core/app/list', body);
      console.log(`${label}: member sees ${check.length} apps`);
      if (check.length === 0) throw new Error(`${label}: the member sees no app (a stale list?)`);
      const ours = await measure({ url: `${env.url}/api/core/app/list`, method: 'POST', headers: { token: memberToken }, body, duration, connections });
      const bare = await measure({ url: `${baseline.url}/list`, method: 'POST', body, duration, connections });
      if (bare.failures > 0 || bare.total === 0) console.log(`baseline: ${bare.total} completed, ${bare.failures} failed`);
      report(label, ours, bare);
    }
  } finally {
    await baseline.stop();
  }
} finally {
  await env.stop();
}
