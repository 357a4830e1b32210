import { defineConfig } from 'vitest/config';

const common = {
  pool: 'forks' as const,
  testTimeout: 20_000,
  hookTimeout: 30_000,
};

export default defineConfig({
  test: {
    // Tests start real servers (HTTP upstreams on port 0, redis-server on a free port).
    // Two cores: keep parallelism modest so timing-sensitive tests stay stable.
    maxWorkers: 2,
    projects: [
      { test: { ...common, name: 'gatehouse', include: ['test/**/*.test.ts'] } },
      // Every proxy behaviour again on the other forwarding engines: the
      // benchmark compares engines only while they pass the same tests.
      ...['http-proxy', 'http-proxy-3'].map((engine) => ({
        test: {
          ...common,
          name: `proxy on ${engine}`,
          include: ['test/proxy/**/*.test.ts', 'test/requests/capture.test.ts'],
          env: { GATEHOUSE_TEST_PROXY_ENGINE: engine },
        },
      })),
    ],
  },
});
