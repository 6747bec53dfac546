import { defineConfig } from 'vitest/config';

/**
 * Two projects, both run by `npm test`: `unit` (pure code, no database, no app) and
 * `integration` (the real app on a real database, started once by the global setup).
 * Run one with `npx vitest run --project unit`.
 *
 * Integration files run in forks that are not isolated: files share each worker's module graph
 * instead of importing the whole service again per file (that import was about 280 s of a
 * 15-minute run). Safe there: every file builds its own app on its own database, no
 * integration test mocks a module, and the few spies restore themselves. Vitest decides a
 * pool's isolation for the whole run, so the unit files (some mock modules) run in their own
 * pool, isolated worker threads.
 */
export default defineConfig({
  test: {
    pool: 'forks',
    poolOptions: { forks: { isolate: false } },
    // Two cores: more workers only add contention on the shared database process.
    maxWorkers: 2,
    minWorkers: 1,
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], pool: 'threads', testTimeout: 30_000 },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
