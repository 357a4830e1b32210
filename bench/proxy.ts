// The proxy's cost against its peers, in one run with one load generator on
// loopback, every server in a process of its own: the upstream direct, a bare
// http-proxy server (the baseline every ratio is to), @fastify/http-proxy,
// nginx when installed, and Gatehouse checking a valid bearer token on every
// request (access, refresh and API-key-login tokens; with its access log off;
// one worker and all workers), its status endpoint and a 202 capture.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { startRedisServer, type RedisServerHandle } from '../test/helpers/redis-server.js';
import { BENCH_USER, loginTokens, startGatehouse, type GatehouseProcess } from './lib/gatehouse.js';
import { generatorName } from './lib/load.js';
import { measure, settingsFromEnv, type MeasureSettings, type Subject } from './lib/measure.js';
import { hasNginx, startNginx } from './lib/nginx.js';
import { processCpuMicros, startServer, type ServerProcess } from './lib/processes.js';
import { printTable, writeResults, type Row } from './lib/report.js';

const BASELINE = 'bare http-proxy (no auth)';

/** CPU of a cluster primary and all its workers. */
function clusterCpuMicros(primary: GatehouseProcess): () => number {
  return () => {
    const pids = [primary.child.pid!, ...childPids(primary.child.pid!)];
    return pids.reduce((sum, pid) => sum + processCpuMicros(pid), 0);
  };
}

function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export async function runProxySection(overrides: Partial<MeasureSettings> = {}): Promise<Row[]> {
  const settings = settingsFromEnv(overrides);
  const servers: Array<ServerProcess | GatehouseProcess> = [];
  let redis: RedisServerHandle | undefined;
  try {
    const redisUrl = process.env.BENCH_REDIS_URL ?? (redis = await startRedisServer()).url;
    const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
    servers.push(upstream);
    const bare = await startServer('bare-http-proxy', ['bench/servers/bare-http-proxy.mjs'], { TARGET: upstream.url });
    const fastify = await startServer('fastify-http-proxy', ['bench/servers/fastify-http-proxy.mjs'], { TARGET: upstream.url });
    servers.push(bare, fastify);
    const nginx = hasNginx() ? await startNginx(upstream.port) : undefined;
    if (nginx) servers.push(nginx);

    const routes = [{ prefix: '/', upstreams: [upstream.url] }];
    const store = { store: { url: redisUrl } };
    const one = await startGatehouse({ routes, extra: store });
    // The peers write no access log; this row shows what Gatehouse's own line costs.
    const quiet = await startGatehouse({ routes, extra: { ...store, log: { access: false } } });
    const workers = availableParallelism();
    const all = await startGatehouse({ routes, extra: { ...store, server: { workers } } });
    servers.push(one, quiet, all);

    const access = await loginTokens(one.url);
    const viaKey = await loginTokens(one.url, one.apiKey);
    const quietTokens = await loginTokens(quiet.url);
    const allTokens = await loginTokens(all.url);
    const job = await fetch(`${one.url}/jobs`, { method: 'POST', headers: { authorization: `Bearer ${access.access_token}` } });
    const { requestId } = (await job.json()) as { requestId: string };
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

    const subjects: Subject[] = [
      { name: 'upstream direct', url: `${upstream.url}/items/1`, cpuMicros: upstream.cpuMicros },
      { name: BASELINE, url: `${bare.url}/items/1`, cpuMicros: bare.cpuMicros },
      { name: '@fastify/http-proxy (no auth)', url: `${fastify.url}/items/1`, cpuMicros: fastify.cpuMicros },
      ...(nginx ? [{ name: 'nginx (no auth)', url: `${nginx.url}/items/1`, cpuMicros: nginx.cpuMicros }] : []),
      { name: 'gatehouse, access token', url: `${one.url}/items/1`, headers: bearer(access.access_token), cpuMicros: one.cpuMicros },
      { name: 'gatehouse, refresh token', url: `${one.url}/items/1`, headers: bearer(access.refresh_token), cpuMicros: one.cpuMicros },
      { name: 'gatehouse, API-key login', url: `${one.url}/items/1`, headers: bearer(viaKey.access_token), cpuMicros: one.cpuMicros },
      { name: 'gatehouse, access log off', url: `${quiet.url}/items/1`, headers: bearer(quietTokens.access_token), cpuMicros: quiet.cpuMicros },
      { name: `gatehouse, ${workers} workers`, url: `${all.url}/items/1`, headers: bearer(allTokens.access_token), cpuMicros: clusterCpuMicros(all) },
      { name: 'gatehouse status poll', url: `${one.url}/api/v1/requests/${requestId}/status`, headers: bearer(access.access_token), cpuMicros: one.cpuMicros },
      { name: 'gatehouse 202 capture', url: `${one.url}/jobs`, headers: bearer(access.access_token), cpuMicros: one.cpuMicros },
    ];
    const rows = await measure(subjects, settings);
    if (!nginx) rows.push({ name: 'nginx', note: 'skipped: no nginx binary on PATH' });
    printTable(
      `Gatehouse and its peers: medians of ${settings.rounds} rounds at c=${settings.connections}, ${settings.durationS} s each, ${generatorName()}; ` +
        `one process each (Gatehouse on Redis, user ${BENCH_USER}); fixed-rate p99 at ${settings.fixedRate} req/s`,
      rows,
      BASELINE,
    );
    const byName = (name: string) => rows.find((r) => r.name === name)!;
    const base = byName(BASELINE);
    const gate = byName('gatehouse, access token');
    const fast = byName('@fastify/http-proxy (no auth)');
    const direct = byName('upstream direct');
    process.stdout.write(
      `targets: gatehouse / bare http-proxy ${(gate.rps! / base.rps!).toFixed(2)}× (≥ 1.0), ` +
        `gatehouse / @fastify/http-proxy ${(gate.rps! / fast.rps!).toFixed(2)}× (≥ 1.0), ` +
        `c=1 p99 gatehouse − bare ${(gate.c1P99Ms! - base.c1P99Ms!).toFixed(3)} ms (≤ 0.3), ` +
        `status polls / proxied ${(byName('gatehouse status poll').rps! / gate.rps!).toFixed(2)}× (≥ 0.9), ` +
        `fixed-rate p99 added vs direct ${(Number(gate.fixedRateP99Ms) - Number(direct.fixedRateP99Ms)).toFixed(3)} ms (< 1)\n`,
    );
    writeResults('proxy', { settings, rows });
    return rows;
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await redis?.close();
  }
}
