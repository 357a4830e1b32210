// One load generator for every row of a run: wrk when it is installed (a C
// client leaves more CPU to the servers on a small machine), autocannon
// otherwise. Fixed-rate runs always use autocannon (wrk has no rate limit).
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import autocannon from 'autocannon';

export interface LoadOptions {
  connections: number;
  durationS: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Requests per second for the whole run (autocannon); absent: as fast as possible. */
  rate?: number;
}

export interface LoadResult {
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Non-2xx/3xx answers plus socket errors: a benchmark row with errors is void. */
  errors: number;
  generator: 'wrk' | 'autocannon';
}

const run = promisify(execFile);

export function hasWrk(): boolean {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (error) {
    // wrk prints its version and exits 1; only a missing binary is a "no".
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

const WRK = hasWrk();

export function generatorName(): 'wrk' | 'autocannon' {
  return WRK ? 'wrk' : 'autocannon';
}

export async function load(url: string, options: LoadOptions): Promise<LoadResult> {
  return WRK && options.rate === undefined ? wrk(url, options) : viaAutocannon(url, options);
}

async function wrk(url: string, options: LoadOptions): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-'));
  const script = join(dir, 'request.lua');
  const lines = [`wrk.method = ${JSON.stringify(options.method ?? 'GET')}`];
  for (const [name, value] of Object.entries(options.headers ?? {})) lines.push(`wrk.headers[${JSON.stringify(name)}] = ${JSON.stringify(value)}`);
  if (options.body !== undefined) lines.push(`wrk.body = ${JSON.stringify(options.body)}`);
  writeFileSync(script, `${lines.join('\n')}\n`);
  const { stdout } = await run('wrk', ['-t1', `-c${options.connections}`, `-d${options.durationS}s`, '--latency', '-s', script, url], {
    maxBuffer: 1 << 20,
  });
  const latency = (pct: string) => toMs(new RegExp(`^\\s+${pct}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(stdout));
  const requests = Number(/(\d+) requests in/.exec(stdout)?.[1] ?? 0);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
  const socketErrors = socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0;
  return {
    requests,
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1] ?? 0),
    p50Ms: latency('50'),
    p99Ms: latency('99'),
    errors: non2xx + socketErrors,
    generator: 'wrk',
  };
}

function toMs(match: RegExpExecArray | null): number {
  if (!match) return Number.NaN;
  const value = Number(match[1]);
  return match[2] === 'us' ? value / 1000 : match[2] === 's' ? value * 1000 : value;
}

async function viaAutocannon(url: string, options: LoadOptions): Promise<LoadResult> {
  const result = await autocannon({
    url,
    connections: options.connections,
    duration: options.durationS,
    method: (options.method ?? 'GET') as 'GET',
    headers: options.headers ?? {},
    ...(options.body !== undefined ? { body: options.body } : {}),
    ...(options.rate !== undefined ? { overallRate: options.rate } : {}),
  });
  return {
    requests: result.requests.total,
    rps: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.non2xx + result.errors + result.timeouts,
    generator: 'autocannon',
  };
}
