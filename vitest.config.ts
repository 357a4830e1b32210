import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Tests start real servers (HTTP upstreams on port 0, redis-server on a free port).
    // Two cores: keep parallelism modest so the machine is not oversubscribed.
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
