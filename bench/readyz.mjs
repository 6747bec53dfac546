// GET /readyz (pings MongoDB) against a bare Fastify route doing the same ping.
import { benchSeconds, measure, report, startBaselineProcess, startBenchEnvironment } from './lib.mjs';

const duration = benchSeconds(5);
const env = await startBenchEnvironment();
try {
  const baseline = await startBaselineProcess('bench/baselines/readyz.mjs', { mongoUri: env.mongoUri });
  try {
    await measure({ url: `${baseline.url}/ping`, duration: 1 }); // warm-up
    await measure({ url: `${env.url}/readyz`, duration: 1 });
    const bare = await measure({ url: `${baseline.url}/ping`, duration });
    const ours = await measure({ url: `${env.url}/readyz`, duration });
    report('GET /readyz', ours, bare);
  } finally {
    await baseline.stop();
  }
} finally {
  await env.stop();
}
