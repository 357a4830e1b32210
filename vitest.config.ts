import { defineConfig } from 'vitest/config';

/**
 * Files that replace a module with `vi.mock`: each gets a module registry of its own. Every other file shares its
 * worker's modules with the files before it (`isolate: false`), so Fastify, undici, ioredis, jose and the gateway
 * are imported once per worker rather than once per file: on two cores that import was most of the suite's time.
 * A file that changes a process-wide setting (fake timers, a listener) restores it in its own hooks.
 */
const MOCKING = [
  'test/users/equal-work.test.ts',
  'test/users/local-provider.test.ts',
  'test/config/reload-sections.test.ts',
  'test/config/reload.test.ts',
  'test/app/live-parts.test.ts',
  'test/proxy/route-reload.test.ts',
];

export default defineConfig({
  test: {
    pool: 'forks',
    // Tests start real servers (HTTP upstreams on port 0, redis-server on a free port).
    // Two cores: keep parallelism modest so the machine is not oversubscribed.
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 30_000,
    projects: [
      { extends: true, test: { name: 'shared', include: ['test/**/*.test.ts'], exclude: MOCKING, isolate: false } },
      { extends: true, test: { name: 'isolated', include: MOCKING, isolate: true } },
    ],
  },
});
