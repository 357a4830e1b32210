// Two builds of Gatehouse on the same hot path, in one run: the working tree's
// `dist/` against a baseline commit (`BENCH_BASELINE_REF`, required: no default
// commit is meaningful for every change). The claim "this change costs no more CPU per proxied request" is
// only worth the same-run comparison: req/s moves with the machine, CPU µs per
// request much less, and the rows are interleaved so neither build is always
// measured cold.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startRedisServer, type RedisServerHandle } from '../test/helpers/redis-server.js';
import { loginTokens, startGatehouse, type GatehouseProcess } from './lib/gatehouse.js';
import { generatorName } from './lib/load.js';
import { measure, settingsFromEnv, type Subject } from './lib/measure.js';
import { startServer, type ServerProcess } from './lib/processes.js';
import { printTable, writeResults, type Row } from './lib/report.js';

const say = (line: string) => process.stdout.write(`[builds] ${line}\n`);

/** Checks out `ref` beside the repository and compiles it with this tree's dependencies. */
function buildRef(ref: string): { distDir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-baseline-'));
  say(`building ${ref} in ${dir}`);
  execFileSync('git', ['worktree', 'add', '--detach', dir, ref], { stdio: 'ignore' });
  symlinkSync(resolve('node_modules'), join(dir, 'node_modules'));
  execFileSync(process.execPath, [resolve('node_modules/typescript/bin/tsc'), '-p', join(dir, 'tsconfig.build.json')], { stdio: 'inherit' });
  return {
    distDir: join(dir, 'dist'),
    cleanup: () => {
      execFileSync('git', ['worktree', 'remove', '--force', dir], { stdio: 'ignore' });
      if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function runBuildsSection(): Promise<Row[]> {
  const ref = process.env.BENCH_BASELINE_REF;
  if (!ref) {
    say('skipped: set BENCH_BASELINE_REF to the commit to compare the working tree with');
    return [];
  }
  const settings = { ...settingsFromEnv(), fixedRate: 0 };
  const baseline = buildRef(ref);
  const servers: Array<ServerProcess | GatehouseProcess> = [];
  let redis: RedisServerHandle | undefined;
  try {
    redis = await startRedisServer();
    const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
    servers.push(upstream);
    const routes = [{ prefix: '/', upstreams: [upstream.url] }];
    const extra = { store: { url: redis.url } };
    const current = await startGatehouse({ routes, extra });
    const old = await startGatehouse({ routes, extra, distDir: baseline.distDir });
    servers.push(current, old);
    const subjects: Subject[] = [];
    for (const [name, gatehouse] of [
      [`baseline ${ref}`, old],
      ['this tree', current],
    ] as const) {
      const tokens = await loginTokens(gatehouse.url);
      subjects.push({ name, url: `${gatehouse.url}/items/1`, headers: { authorization: `Bearer ${tokens.access_token}` }, cpuMicros: gatehouse.cpuMicros });
    }
    say(`measuring ${subjects.length} rows, ${settings.rounds} interleaved rounds of ${settings.durationS} s`);
    const rows = await measure(subjects, settings);
    printTable(
      'Two builds, one run: proxied request with a bearer check, Redis store; ' +
        `medians of ${settings.rounds} rounds at c=${settings.connections}, ${settings.durationS} s, ${generatorName()}`,
      rows,
      `baseline ${ref}`,
    );
    const [before, after] = rows;
    if (before?.cpuUsPerRequest && after?.cpuUsPerRequest) {
      say(
        `CPU per request: ${before.cpuUsPerRequest.toFixed(1)} µs → ${after.cpuUsPerRequest.toFixed(1)} µs ` +
          `(${((after.cpuUsPerRequest / before.cpuUsPerRequest - 1) * 100).toFixed(1)} %)`,
      );
    }
    writeResults('builds', { ref, settings, rows });
    return rows;
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await redis?.close();
    baseline.cleanup();
  }
}
