// What checking paths for look-alikes costs (issue 22): normalising a request
// target and resolving its route with the routing code as it was before the
// check (the parent of the commit that added src/routing/lookalikes.ts, or
// BENCH_PATHS_REF), against the code now, in one process. Rounds interleave
// the two so a busy moment hits both. A plain ASCII path must cost what it
// did; only paths with escapes of encoded slashes or non-ASCII pay.
//
//   npm run bench -- paths
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { RouteSchema } from '../src/config/schema.js';
import * as now from '../src/routing/route-table.js';
import { writeResults } from './lib/report.js';
import { median } from './lib/stats.js';

const ROUNDS = 15;
const OPS = 400_000;

const ROUTES = [
  { prefix: '/api/v1/orders', rewritePrefix: '/orders' },
  { prefix: '/files', allowEncodedSlashes: true, rewritePrefix: '/bucket/files' },
  { prefix: '/site', auth: 'none' },
  { prefix: '/site/admin' },
  { prefix: '/', auth: 'none' },
].map((fields) => RouteSchema.parse({ upstreams: ['http://127.0.0.1:1'], ...fields }));

const PATHS: Record<string, string> = {
  'plain ASCII': '/api/v1/orders/7?x=1',
  'plain, long': '/site/reports/2026/11/quarterly-summary-final.v2.pdf',
  'ASCII escapes': '/site/a%20b/c%7Ed',
  'encoded slash': '/files/a%2Fb/c%2Fd.txt',
  'non-ASCII': '/site/caf%C3%A9/%E2%82%AC/%E3%81%82',
};

type Routing = typeof now;

/** The routing code of `ref`, with the core module it imports, in a directory of its own. */
async function routingAt(ref: string): Promise<{ routing: Routing; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-paths-'));
  const archive = execFileSync('git', ['archive', ref, 'src/routing', 'src/core', 'src/config']);
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  const routing = (await import(pathToFileURL(join(dir, 'src/routing/route-table.ts')).href)) as Routing;
  return { routing, dir };
}

function baselineRef(): string {
  if (process.env.BENCH_PATHS_REF) return process.env.BENCH_PATHS_REF;
  const added = execFileSync('git', ['log', '--format=%H', '--diff-filter=A', '--', 'src/routing/lookalikes.ts'], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .at(-1)!;
  return `${added}^`;
}

/** CPU time, not wall-clock time: on a shared machine, time spent descheduled is not the code's. */
function nsPerOp(routing: Routing, table: unknown, url: string): number {
  const t = table as Parameters<Routing['resolveRoute']>[0];
  const start = process.cpuUsage();
  for (let i = 0; i < OPS; i++) routing.resolveRoute(t, 'GET', 'gateway.test', url);
  const used = process.cpuUsage(start);
  return ((used.user + used.system) * 1000) / OPS;
}

export async function runPathsSection(): Promise<void> {
  const ref = baselineRef();
  const { routing: before, dir } = await routingAt(ref);
  try {
    const tables = { before: before.RouteTable.compile(ROUTES), now: now.RouteTable.compile(ROUTES) };
    const rows = Object.entries(PATHS).map(([kind, url]) => {
      for (let i = 0; i < 3; i++) {
        nsPerOp(before, tables.before, url); // warm-up
        nsPerOp(now, tables.now, url);
      }
      const was: number[] = [];
      const is: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        // Alternating which goes first, so neither always runs right after a collection the other caused.
        if (round % 2 === 0) was.push(nsPerOp(before, tables.before, url));
        is.push(nsPerOp(now, tables.now, url));
        if (round % 2 === 1) was.push(nsPerOp(before, tables.before, url));
      }
      return { kind, url, beforeNs: median(was), nowNs: median(is), ratio: median(is) / median(was) };
    });
    const lines = rows.map(
      (r) => `${r.kind.padEnd(14)} ${r.beforeNs.toFixed(0).padStart(6)} ns  ${r.nowNs.toFixed(0).padStart(6)} ns  ${r.ratio.toFixed(2)}×  ${r.url}`,
    );
    process.stdout.write(
      `\nresolveRoute per request, before the look-alike check (${ref}) and now (CPU ns per call, median of ${ROUNDS} rounds of ${OPS})\n${lines.join('\n')}\n`,
    );
    writeResults('paths', { ref, rows });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
