// HTTP/2 load from h2load (Debian's nghttp2-client, installed by
// scripts/bench-prerequisites.sh): a C client, so the gateway and not the
// generator bounds the h2 rows. `connections` connections with `streams`
// requests in flight on each, for `durationS`. h2load reports no latency
// percentiles (a mean only): an h2 row's c=1 latencies come from h2-load.ts.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface H2loadResult {
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

export async function h2load(
  url: string,
  options: { connections: number; streams: number; durationS: number; headers?: Record<string, string> },
): Promise<H2loadResult> {
  const headerArgs = Object.entries(options.headers ?? {}).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
  const args = ['-c', String(options.connections), '-m', String(options.streams), '-D', String(options.durationS), '-t', '1', ...headerArgs, url];
  const { stdout } = await run(process.env.H2LOAD_BIN ?? 'h2load', args, { maxBuffer: 1 << 20 });
  const done = /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(stdout);
  const non2xx = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(stdout);
  if (!done) throw new Error(`h2load printed no totals:\n${stdout}`);
  const requests = Number(done[3]);
  const errors = Number(done[5]) + Number(done[6]) + Number(done[7]) + (non2xx ? Number(non2xx[3]) + Number(non2xx[4]) : 0);
  return { requests, rps: Number(/finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(stdout)?.[1] ?? 0), p50Ms: Number.NaN, p99Ms: Number.NaN, errors };
}
