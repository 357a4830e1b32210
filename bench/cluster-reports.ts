// `npx tsx bench/cluster-reports.ts`: how long a backend's status report
// takes to be acknowledged (the internal API's PUT, from send to answer) on a
// real Redis Cluster of three masters, in four cases: no replicas
// (`--cluster-replicas 0`), a replica per master that is running, those
// replicas hung after the 202s (SIGSTOP: still attached, so every WAIT runs
// out its 500 ms and the report is kept in the journal and outbox), and shut
// down (SIGKILL; the 202s and reports after the lone-master grace). One gateway,
// in this process; BENCH_REPORTS reports per case (default 60), each on a
// fresh 202, sent one after another and then BENCH_BURST (default 12) at once.
//
// Figures, not assertions: docs/guides/async-requests.md quotes them.
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { login, startTestGateway, type TestGateway, type TokenSetBody } from '../test/helpers/gateway.js';
import { command, infoField } from '../test/helpers/redis-nodes.js';
import { startCluster, type RedisCluster } from '../test/helpers/redis-topology.js';
import { startUpstream, type Upstream } from '../test/helpers/upstream.js';
import { percentile } from './lib/stats.js';

const REPORTS = Number(process.env.BENCH_REPORTS ?? 60);
const BURST = Number(process.env.BENCH_BURST ?? 12);
const SERVICE_TOKEN = `bench-${randomUUID()}`;

interface Timing {
  case: string;
  p50: number;
  p95: number;
  max: number;
  burstMax: number;
  refused: number;
}

async function accepted(gw: TestGateway, tokens: TokenSetBody): Promise<string> {
  const response = await fetch(`${gw.url}/jobs/new`, { method: 'POST', headers: { authorization: `Bearer ${tokens.access_token}` } });
  if (response.status !== 202) throw new Error(`no 202: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { requestId: string }).requestId;
}

/** Milliseconds from sending a report to its answer, and whether it was acknowledged. */
async function report(gw: TestGateway, id: string): Promise<{ ms: number; ok: boolean }> {
  const started = performance.now();
  const response = await fetch(`${gw.adminUrl}/internal/v1/requests/${id}/status`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${SERVICE_TOKEN}` },
    body: JSON.stringify({ status: 'completed' }),
  });
  await response.text();
  return { ms: performance.now() - started, ok: response.status === 200 };
}

interface Hooks {
  /** Before the case's 202s (records written to a master with replicas as they are then). */
  beforeAccepting?: () => Promise<void>;
  /** After its 202s, before its reports. */
  beforeReporting?: () => Promise<void>;
}

async function measureCase(name: string, cluster: RedisCluster, upstream: Upstream, hooks: Hooks = {}): Promise<Timing> {
  const url = `redis-cluster://${cluster.nodes.map(({ host, port }) => `${host}:${port}`).join(',')}`;
  const gw = await startTestGateway({
    config: { store: { url }, requests: { serviceToken: SERVICE_TOKEN }, routes: [{ name: 'jobs', prefix: '/jobs', upstreams: [upstream.url] }] },
  });
  try {
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    await hooks.beforeAccepting?.();
    const single: string[] = [];
    for (let i = 0; i < REPORTS; i += 1) single.push(await accepted(gw, tokens));
    const ids = await Promise.all(Array.from({ length: BURST }, () => accepted(gw, tokens)));
    await hooks.beforeReporting?.();
    const samples: number[] = [];
    let refused = 0;
    for (let i = 0; i < REPORTS; i += 1) {
      const { ms, ok } = await report(gw, single[i]!);
      samples.push(ms);
      if (!ok) refused += 1;
      if ((i + 1) % 20 === 0) process.stdout.write(`  ${name}: ${i + 1}/${REPORTS} reports\n`);
    }
    const burst = await Promise.all(ids.map((id) => report(gw, id)));
    refused += burst.filter(({ ok }) => !ok).length;
    samples.sort((x, y) => x - y);
    const round = (ms: number) => Math.round(ms * 10) / 10;
    return {
      case: name,
      p50: round(percentile(samples, 0.5)),
      p95: round(percentile(samples, 0.95)),
      max: round(samples[samples.length - 1]!),
      burstMax: round(Math.max(...burst.map(({ ms }) => ms))),
      refused,
    };
  } finally {
    await gw.close();
  }
}

async function replicaPids(cluster: RedisCluster): Promise<number[]> {
  const masters = await cluster.masters();
  const replicas = masters.flatMap((master) => master.replicas);
  return Promise.all(replicas.map(async (port) => Number(infoField(String(await command(port, 'INFO', 'server')), 'process_id'))));
}

const upstream = await startUpstream((req, res) => {
  req.resume();
  res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ requestId: randomUUID() }));
});
const timings: Timing[] = [];
try {
  process.stdout.write('starting a Cluster of 3 masters without replicas\n');
  const bare = await startCluster(0);
  try {
    timings.push(await measureCase('no replicas', bare, upstream));
  } finally {
    await bare.close();
  }
  process.stdout.write('starting a Cluster of 3 masters with a replica each\n');
  const replicated = await startCluster(1);
  try {
    timings.push(await measureCase('replica up', replicated, upstream));
    const pids = await replicaPids(replicated);
    // Hung: still attached, so every WAIT runs out; the 202s came before it hung.
    const hang = async () => void pids.forEach((pid) => process.kill(pid, 'SIGSTOP'));
    try {
      timings.push(await measureCase('replica hung', replicated, upstream, { beforeReporting: hang }));
    } finally {
      for (const pid of pids) process.kill(pid, 'SIGCONT');
    }
    // Shut down: its master is alone, and past the grace (5 s) writes are taken without waiting.
    const shutDown = async () => {
      for (const pid of pids) process.kill(pid, 'SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 6_000));
    };
    timings.push(await measureCase('replica down', replicated, upstream, { beforeAccepting: shutDown }));
  } finally {
    await replicated.close();
  }
} finally {
  await upstream.close();
}
process.stdout.write(`\nstatus report, send to answer, ms (${REPORTS} one at a time; max of ${BURST} at once); load ${loadavg()[0]!.toFixed(2)}\n`);
process.stdout.write('case             p50      p95      max      burst max  refused\n');
for (const t of timings) {
  const cells = [t.p50, t.p95, t.max].map((ms) => String(ms).padStart(6)).join('   ');
  process.stdout.write(`${t.case.padEnd(16)} ${cells}   ${String(t.burstMax).padStart(9)}  ${t.refused}\n`);
}
