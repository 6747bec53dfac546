// The built server with a CPU profiler switched by SIGUSR2: the first signal starts a profile,
// the next writes it to BENCH_PROFILE_DIR/<n>.cpuprofile, so a bench profiles only the phase it
// measures (seeding and the limit's turn stay out). Started by bench/lib.mjs when BENCH_PROFILE_DIR is set.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

const session = new Session();
session.connect();
await session.post('Profiler.enable');
let running = false;
let written = 0;
process.on('SIGUSR2', async () => {
  if (!running) {
    running = true;
    await session.post('Profiler.start');
    return;
  }
  running = false;
  const { profile } = await session.post('Profiler.stop');
  written += 1;
  writeFileSync(join(process.env.BENCH_PROFILE_DIR, `${written}.cpuprofile`), JSON.stringify(profile));
});
await import('../dist/server.js');
