#!/usr/bin/env node
// Brings the server up on a fresh machine: dependencies, build, a local database when
// MONGODB_URI is unset (data kept in .data/db), then the server on PORT (3000). Its logs are
// readable on a terminal (pino-pretty) and JSON lines when stdout is redirected.
import { execSync, spawn } from 'node:child_process';
import { ensureDependencies } from './ensure-deps.mjs';
import { startLocalDatabase } from './local-db.mjs';
import { localSecrets } from './local-secrets.mjs';

// Only Node's own modules are imported above: npm packages are loaded after they are installed.
ensureDependencies();
const { logOutput } = await import('./log-output.mjs');
console.error('[up] building...');
execSync('npx tsc -p tsconfig.build.json', { stdio: 'inherit' });

let database;
const env = { ...process.env };
if (!env.MONGODB_URI) {
  database = await startLocalDatabase({ dataDir: '.data/db' });
  env.MONGODB_URI = `${database.uri}platform`;
  console.error(`[up] local ${database.engine} on ${database.uri} (data in ${database.dataDir})`);
}
// Secrets of this machine (made on the first start, kept in .data), so sessions survive restarts
// and none is public; production sets its own. The quick start's passwords are public, so the
// server listens on this machine only unless HOST says otherwise.
for (const [name, value] of Object.entries(localSecrets('.data/local-secrets.json'))) env[name] ??= value;
env.HOST ??= '127.0.0.1';
env.DEFAULT_ROOT_PSW ??= '123456';

const server = spawn(process.execPath, ['dist/server.js'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
const port = env.PORT ?? '3000';
// Readable lines on a terminal, JSON when redirected.
const logs = logOutput(process.stdout);
let announced = false;
server.stdout.on('data', (chunk) => {
  logs.write(chunk);
  if (!announced && chunk.toString().includes('listening on')) {
    announced = true;
    console.error(`
[up] server ready at http://localhost:${port}
  platform API: http://localhost:${port}/api   (login: root / ${env.DEFAULT_ROOT_PSW === '123456' ? '123456' : 'DEFAULT_ROOT_PSW'})
    curl -s -X POST http://localhost:${port}/api/support/user/account/loginByPassword -H 'content-type: application/json' -d '{"username":"root","password":"${env.DEFAULT_ROOT_PSW === '123456' ? '123456' : '<DEFAULT_ROOT_PSW>'}"}'
  cluster API:  http://localhost:${port}/oauth/token   (admin / CLUSTER_ADMIN_PASSWORD, default P@88w0rd; client kubesphere/kubesphere)
    curl -s -X POST http://localhost:${port}/oauth/token -d 'grant_type=password&username=admin&password=P%4088w0rd&client_id=kubesphere&client_secret=kubesphere'
  OpenAPI:      http://localhost:${port}/openapi.json   (browse it at http://localhost:${port}/docs)
  metrics:      http://localhost:${port}/metrics        readiness: http://localhost:${port}/readyz
  Ctrl-C stops the server and the local database.
`);
  }
});
const stop = async (signal) => {
  server.kill(signal);
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
server.on('exit', async (code) => {
  if (database) await database.stop();
  process.exit(code ?? 0);
});
