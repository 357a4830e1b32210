// The floor's second regime: each server pinned to CPU 0 with taskset, a Node
// keep-alive client at 64 connections in a process of its own pinned to CPU 1
// beside the upstream, Gatehouse on the in-memory store (access line and
// metrics on). Pairs of short runs, the floor then Gatehouse, the figure the
// median of the pairs' own ratios of CPU µs per request. The first regime
// (wrk or autocannon at c=50, everything sharing both CPUs, Redis) is
// bench/floor.ts; docs/performance.md says why the two differ.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { loginTokens, startGatehouse, type GatehouseProcess } from './lib/gatehouse.js';
import { startServer, type ServerProcess } from './lib/processes.js';
import { median } from './lib/stats.js';

const SERVER_CPU = 0;
const CLIENT_CPU = 1;
const CONNECTIONS = 64;
const WARM_UP_S = 10;
const run = promisify(execFile);

export interface PinnedRegime {
  pairs: number;
  pairS: number;
  floorUs: number[];
  gatehouseUs: number[];
  pairRatios: number[];
  /** The median of the pairs' ratios. */
  ratio: number;
}

interface Driven {
  requests: number;
  rps: number;
  errors: number;
}

/** Load from the client process pinned to the client's CPU; the server's CPU µs per request. */
async function cpuPerRequest(server: { cpuMicros(): number }, url: string, headers: Record<string, string>, seconds: number): Promise<number> {
  const before = server.cpuMicros();
  const client = 'bench/lib/keepalive-client.mjs';
  const { stdout } = await run('taskset', [
    '-c',
    String(CLIENT_CPU),
    process.execPath,
    client,
    url,
    String(CONNECTIONS),
    String(seconds),
    JSON.stringify(headers),
  ]);
  const driven = JSON.parse(stdout) as Driven;
  if (driven.errors > 0) throw new Error(`${url}: ${driven.errors} errors in a pinned run`);
  return (server.cpuMicros() - before) / Math.max(1, driven.requests);
}

export async function runPinnedRegime(pairs: number, pairS: number, say: (line: string) => void): Promise<PinnedRegime> {
  const servers: Array<ServerProcess | GatehouseProcess> = [];
  try {
    const upstream = await startServer('upstream', ['bench/servers/upstream.mjs'], {}, CLIENT_CPU);
    servers.push(upstream);
    const floor = await startServer('node-floor', ['bench/servers/node-floor.mjs'], { TARGET: upstream.url }, SERVER_CPU);
    servers.push(floor);
    const gatehouse = await startGatehouse({ routes: [{ prefix: '/', upstreams: [upstream.url] }], cpu: SERVER_CPU });
    servers.push(gatehouse);
    const headers = { authorization: `Bearer ${(await loginTokens(gatehouse.url)).access_token}` };
    const rows = [
      { server: floor, url: `${floor.url}/items/1`, headers: {} },
      { server: gatehouse, url: `${gatehouse.url}/items/1`, headers },
    ];
    say(`pinned regime: servers on CPU ${SERVER_CPU}, client (${CONNECTIONS} connections) and upstream on CPU ${CLIENT_CPU}, ${pairs} pairs of ${pairS} s`);
    // Pinned, V8's optimising compiler runs on the same CPU as the server it compiles, and Gatehouse has far more
    // code to optimise than the floor: its first pairs after 3 s of warm-up read 1.6-2.3x, the later ones 1.0-1.1x.
    for (const row of rows) await cpuPerRequest(row.server, row.url, row.headers, WARM_UP_S);
    const floorUs: number[] = [];
    const gatehouseUs: number[] = [];
    for (let pair = 0; pair < pairs; pair++) {
      floorUs.push(await cpuPerRequest(floor, rows[0]!.url, {}, pairS));
      gatehouseUs.push(await cpuPerRequest(gatehouse, rows[1]!.url, headers, pairS));
      say(`pinned pair ${pair + 1}/${pairs}: floor ${floorUs.at(-1)!.toFixed(1)} µs, gatehouse ${gatehouseUs.at(-1)!.toFixed(1)} µs CPU per request`);
    }
    const pairRatios = gatehouseUs.map((us, i) => us / floorUs[i]!);
    return { pairs, pairS, floorUs, gatehouseUs, pairRatios, ratio: median(pairRatios) };
  } finally {
    await Promise.allSettled(servers.map((s) => s.stop()));
  }
}
