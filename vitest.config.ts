import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

/**
 * Files that replace a module (`vi.mock`, `vi.doMock`) or read the process's own event loop (its utilization is the
 * whole process's, which an earlier file's leftover timers and sockets would share), found by reading them: each gets
 * a process and a module registry of its own, and a new one is found without a list to keep. Every other file shares its worker's modules with the files before
 * it (`isolate: false`), so Fastify, undici, ioredis, jose and the gateway are imported once per worker rather than
 * once per file: on two cores that import was most of the suite's time (386 s of import in 756 s; 39 s after).
 * A file that changes a process-wide setting (fake timers, a listener) restores it in its own hooks.
 */
const OWN_PROCESS = readdirSync('test', { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.test.ts'))
  .map((file) => join('test', file))
  .filter((file) => /\bvi\.(?:do)?[mM]ock\(|NodeLoopGauge|eventLoopUtilization|monitorEventLoopDelay/.test(readFileSync(file, 'utf8')));

export default defineConfig({
  test: {
    pool: 'forks',
    // Tests start real servers (HTTP upstreams on port 0, redis-server on a free port).
    // Two cores: keep parallelism modest so the machine is not oversubscribed.
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 30_000,
    projects: [
      { extends: true, test: { name: 'shared', include: ['test/**/*.test.ts'], exclude: OWN_PROCESS, isolate: false } },
      { extends: true, test: { name: 'isolated', include: OWN_PROCESS, isolate: true } },
    ],
  },
});
