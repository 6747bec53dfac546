// POST /oauth/token (password grant): logins per second, where the scrypt KDF dominates, against
// a bare Fastify route doing the same user lookup + scrypt check + allow-list insert. Then a
// login storm runs while GET /healthz is loaded: its latency shows whether the event loop stays
// free (scrypt runs on the libuv thread pool).
import { randomBytes, scrypt as scryptCallback } from 'node:crypto';
import { promisify } from 'node:util';
import { benchSeconds, measure, report, startBaseline, startBenchEnvironment } from './lib.mjs';

const scrypt = promisify(scryptCallback);
const duration = benchSeconds(5);
const form = new URLSearchParams({ grant_type: 'password', username: 'admin', password: 'P@88w0rd', client_id: 'kubesphere', client_secret: 'kubesphere' }).toString();
const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };

const env = await startBenchEnvironment({ env: { CLUSTER_REGISTER_HOST_NODE: 'false' } });
try {
  const baseline = await startBaseline(env.mongoUri, async (app, db) => {
    const salt = randomBytes(16);
    const key = await scrypt('P@88w0rd', salt, 64, { N: 16384, r: 8, p: 1 });
    await db.collection('bench_users').insertOne({ _id: 'admin', salt, key });
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(body))));
    app.post('/token', async (request, reply) => {
      const user = await db.collection('bench_users').findOne({ _id: request.body.username });
      const derived = await scrypt(request.body.password, user.salt.buffer, 64, { N: 16384, r: 8, p: 1 });
      if (!derived.equals(Buffer.from(user.key.buffer))) return reply.code(400).send({ error: 'invalid_grant' });
      await db.collection('bench_tokens').insertOne({ token: randomBytes(32).toString('hex'), at: new Date() });
      return { access_token: 'x', token_type: 'Bearer', expires_in: 7200 };
    });
    app.get('/healthz', async () => ({ status: 'ok' }));
  });
  try {
    await measure({ url: `${baseline.url}/token`, method: 'POST', headers: formHeaders, body: form, duration: 1 });
    await measure({ url: `${env.url}/oauth/token`, method: 'POST', headers: formHeaders, body: form, duration: 1 });
    const bare = await measure({ url: `${baseline.url}/token`, method: 'POST', headers: formHeaders, body: form, duration });
    const ours = await measure({ url: `${env.url}/oauth/token`, method: 'POST', headers: formHeaders, body: form, duration });
    report('POST /oauth/token (password grant), logins/s', ours, bare);

    const quiet = await measure({ url: `${env.url}/healthz`, duration, connections: 2 });
    const [during] = await Promise.all([
      measure({ url: `${env.url}/healthz`, duration, connections: 2 }),
      measure({ url: `${env.url}/oauth/token`, method: 'POST', headers: formHeaders, body: form, duration, connections: 20 }),
    ]);
    console.log(
      JSON.stringify({
        'GET /healthz alone req/s': Math.round(quiet.requestsPerSecond),
        'alone p99 ms': quiet.p99,
        'during login storm req/s': Math.round(during.requestsPerSecond),
        'during p99 ms': during.p99,
        'healthz failures during storm': during.failures,
      }),
    );
  } finally {
    await baseline.stop();
  }
} finally {
  await env.stop();
}
