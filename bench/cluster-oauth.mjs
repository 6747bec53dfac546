// POST /oauth/token (password grant): logins per second, where the scrypt KDF dominates, against
// a bare Fastify route doing the same user lookup + scrypt check + allow-list insert. Then a
// login storm runs while GET /healthz is loaded: its latency shows whether the event loop stays
// free (scrypt runs on the libuv thread pool).
import { benchSeconds, measure, report, startBaselineProcess, startBenchEnvironment } from './lib.mjs';

const duration = benchSeconds(5);
const form = new URLSearchParams({ grant_type: 'password', username: 'admin', password: 'P@88w0rd', client_id: 'kubesphere', client_secret: 'kubesphere' }).toString();
const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };

const env = await startBenchEnvironment({ env: { CLUSTER_REGISTER_HOST_NODE: 'false' } });
try {
  const baseline = await startBaselineProcess('bench/baselines/cluster-oauth.mjs', { mongoUri: env.mongoUri });
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
