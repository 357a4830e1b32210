// Floods of unauthenticated work (issue 22) against what must keep flowing:
// a real password login from a clean address, proxied GETs with a token
// admitted before (cached), refreshes, and the admin /healthz.
//
// Gatehouse runs pinned to CPU 1 (taskset), the attacker in a process of its
// own pinned to CPU 0 at a lower priority (nice 10), and this process, which
// measures, on CPU 0 too: the attacker's own CPU is not the gateway's. The
// attacker sends from many loopback addresses (bench/lib/flood-attacker.ts).
// Phases, each on a fresh Gatehouse, interleaved in every run:
//   alone · garbage logins from 64 addresses (random usernames, 1 KB passwords,
//   64 at a time) · distinct garbage bearer tokens from one address (64 at a
//   time) · the same from 64 addresses.
// Targets: every clean login succeeds with p95 ≤ 1 s; proxied and refresh
// p50 ≤ 3× alone (same run). The table also shows what the gateway's load
// shedding refused in each phase (its /metrics, read at the phase's end).
//
//   npm run bench -- flood   (BENCH_FLOOD_S: measured seconds per phase, default 10; BENCH_FLOOD_RUNS: default 3)
import { execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { Agent } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import type { AttackSettings, AttackTotals } from './lib/flood-attacker.js';
import { BENCH_PASSWORD, BENCH_USER, loginTokens, startGatehouse } from './lib/gatehouse.js';
import { call } from './lib/http-call.js';
import { own } from './lib/processes.js';
import { writeResults } from './lib/report.js';
import { percentile } from './lib/stats.js';

const MEASURE_S = Number(process.env.BENCH_FLOOD_S ?? 10);
const RUNS = Number(process.env.BENCH_FLOOD_RUNS ?? 3);
/** The flood runs this long before measuring starts, so what is measured is the flood's steady state. */
const FILL_S = 1.5;
const GATEHOUSE_CPU = 1;
const ATTACKER_CPU = 0;
const LOGIN_TIMEOUT_MS = 10_000;

type Attack = Pick<AttackSettings, 'kind' | 'addresses' | 'concurrency'>;

const PHASES: Array<{ name: string; attack?: Attack }> = [
  { name: 'alone' },
  { name: 'garbage logins, 64 addresses', attack: { kind: 'logins', addresses: 64, concurrency: 64 } },
  { name: 'garbage tokens, 1 address', attack: { kind: 'tokens', addresses: 1, concurrency: 64 } },
  { name: 'garbage tokens, 64 addresses', attack: { kind: 'tokens', addresses: 64, concurrency: 64 } },
];

interface Series {
  ms: number[];
  failures: number;
}

interface PhaseResult {
  run: number;
  phase: string;
  loginP50Ms: number;
  loginP95Ms: number;
  loginFailures: number;
  logins: number;
  proxiedP50Ms: number;
  proxiedP95Ms: number;
  proxiedFailures: number;
  refreshP50Ms: number;
  refreshP95Ms: number;
  healthzP50Ms: number;
  healthzP95Ms: number;
  /** Gatehouse's CPU over the measured window, in % of its one CPU. */
  gatehouseCpuPct: number;
  attackRps: number;
  attackAnswers: string;
  /** Requests the gateway shed on event-loop delay in the phase (flood included): unauthenticated / all. */
  shed: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const progress = (line: string) => process.stdout.write(`[bench]   ${line}\n`);

/** Repeats `probe` every `everyMs` until `until`, timing each; a probe that throws or answers wrongly is a failure. */
async function loop(until: number, everyMs: number, probe: () => Promise<boolean>): Promise<Series> {
  const series: Series = { ms: [], failures: 0 };
  while (performance.now() < until) {
    const started = performance.now();
    const ok = await probe().catch(() => false);
    if (ok) series.ms.push(performance.now() - started);
    else series.failures += 1;
    await sleep(everyMs);
  }
  return series;
}

function startAttacker(settings: AttackSettings): Promise<AttackTotals> {
  const child = own(
    spawn('nice', ['-n', '10', 'taskset', '-c', String(ATTACKER_CPU), process.execPath, '--import', 'tsx', 'bench/lib/flood-attacker.ts'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, FLOOD_ATTACK: JSON.stringify(settings) },
    }),
  );
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.once('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!) as AttackTotals) : reject(new Error(`attacker exited ${code}`)),
    ),
  );
}

async function runPhase(run: number, name: string, attack: Attack | undefined, upstreamUrl: string): Promise<PhaseResult> {
  const gatehouse = await startGatehouse({
    routes: [{ name: 'named', prefix: '/named', upstreams: [upstreamUrl] }],
    logLevel: 'warn',
    cpu: GATEHOUSE_CPU,
    // The clean logins below must not end the session whose tokens are measured.
    extra: { limits: { maxSessionsPerUser: 10_000 } },
  });
  const agent = new Agent({ keepAlive: true });
  try {
    const tokens = await loginTokens(gatehouse.url);
    const bearer = { authorization: `Bearer ${tokens.access_token}` };
    // Admitted once: every proxied probe below is a cached token.
    for (let i = 0; i < 20; i++) await call(agent, `${gatehouse.url}/named/x`, { headers: bearer, timeoutMs: 5000 });
    const attacker = attack
      ? startAttacker({
          ...attack,
          url: gatehouse.url,
          seconds: FILL_S + MEASURE_S + 0.5,
          maxRequests: 5_000_000,
          path: '/named/x',
          tokenHeader: tokens.access_token.split('.')[0],
        })
      : undefined;
    await sleep(FILL_S * 1000);
    const cpuBefore = gatehouse.cpuMicros();
    const windowStarted = performance.now();
    const until = windowStarted + MEASURE_S * 1000;
    const json = { 'content-type': 'application/json' };
    const [login, proxied, refresh, healthz] = await Promise.all([
      loop(until, 500, async () => {
        const body = JSON.stringify({ username: BENCH_USER, password: BENCH_PASSWORD });
        return (await call(agent, `${gatehouse.url}/api/v1/auth/login`, { method: 'POST', headers: json, body, timeoutMs: LOGIN_TIMEOUT_MS })).status === 200;
      }),
      loop(until, 10, async () => (await call(agent, `${gatehouse.url}/named/x`, { headers: bearer, timeoutMs: 5000 })).status === 200),
      loop(until, 250, async () => {
        const body = JSON.stringify({ refresh_token: tokens.refresh_token });
        return (await call(agent, `${gatehouse.url}/api/v1/auth/refresh`, { method: 'POST', headers: json, body, timeoutMs: 5000 })).status === 200;
      }),
      loop(until, 100, async () => (await call(agent, `${gatehouse.adminUrl}/healthz`, { timeoutMs: 5000 })).status === 200),
    ]);
    const gatehouseCpuPct = ((gatehouse.cpuMicros() - cpuBefore) / ((performance.now() - windowStarted) * 1000)) * 100;
    const totals = await attacker;
    const shed = await shedCounts(gatehouse.adminUrl);
    const result: PhaseResult = {
      run,
      phase: name,
      loginP50Ms: percentile(login.ms, 0.5),
      // A failed login counts as the slowest: p95 covers every attempt.
      loginP95Ms: percentile([...login.ms, ...Array<number>(login.failures).fill(Number.POSITIVE_INFINITY)], 0.95),
      loginFailures: login.failures,
      logins: login.ms.length + login.failures,
      proxiedP50Ms: percentile(proxied.ms, 0.5),
      proxiedP95Ms: percentile(proxied.ms, 0.95),
      proxiedFailures: proxied.failures,
      refreshP50Ms: percentile(refresh.ms, 0.5),
      refreshP95Ms: percentile(refresh.ms, 0.95),
      healthzP50Ms: percentile(healthz.ms, 0.5),
      healthzP95Ms: percentile(healthz.ms, 0.95),
      gatehouseCpuPct,
      attackRps: totals?.rps ?? 0,
      attackAnswers: totals
        ? Object.entries(totals.statuses)
            .map(([status, count]) => `${status}×${count}`)
            .join(' ')
        : '',
      shed,
    };
    progress(
      `run ${run} ${name}: login p50/p95 ${fmt(result.loginP50Ms)}/${fmt(result.loginP95Ms)} ms (${result.loginFailures} of ${result.logins} failed) · ` +
        `proxied ${fmt(result.proxiedP50Ms)}/${fmt(result.proxiedP95Ms)} · refresh ${fmt(result.refreshP50Ms)}/${fmt(result.refreshP95Ms)} · ` +
        `healthz ${fmt(result.healthzP50Ms)}/${fmt(result.healthzP95Ms)} · gatehouse CPU ${result.gatehouseCpuPct.toFixed(0)} % · ` +
        `attack ${result.attackRps.toFixed(0)}/s ${result.attackAnswers} · shed ${result.shed}`,
    );
    return result;
  } finally {
    agent.destroy();
    await gatehouse.stop();
  }
}

/** What the gateway's load shedding refused since it started (its /metrics), by level. */
async function shedCounts(adminUrl: string): Promise<string> {
  const metrics = await (await fetch(`${adminUrl}/metrics`)).text();
  const count = (level: string) => Number(new RegExp(`gatehouse_shed_requests_total\\{level="${level}"\\} (\\d+)`).exec(metrics)?.[1] ?? 0);
  return `${count('unauthenticated')} / ${count('all')}`;
}

const fmt = (ms: number) => (Number.isFinite(ms) ? ms.toFixed(ms < 10 ? 2 : 0) : '∞');
const ratio = (value: number, base: number) => (Number.isFinite(value) && base > 0 ? `${(value / base).toFixed(1)}×` : '—');

function table(rows: PhaseResult[]): string {
  const head =
    '| run | phase | login p50 / p95 ms | login failed | proxied p50 / p95 ms (× alone) | refresh p50 / p95 ms (× alone) | ' +
    '/healthz p50 / p95 ms | Gatehouse CPU | attack req/s | shed (unauth. / all) | targets |';
  const lines = rows.map((r) => {
    const alone = rows.find((a) => a.run === r.run && a.phase === 'alone')!;
    const met =
      r.loginFailures === 0 && r.loginP95Ms <= 1000 && r.proxiedP50Ms <= 3 * alone.proxiedP50Ms && r.refreshP50Ms <= 3 * alone.refreshP50Ms ? 'met' : 'NOT met';
    return (
      `| ${r.run} | ${r.phase} | ${fmt(r.loginP50Ms)} / ${fmt(r.loginP95Ms)} | ${r.loginFailures} of ${r.logins} | ` +
      `${fmt(r.proxiedP50Ms)} / ${fmt(r.proxiedP95Ms)} (${ratio(r.proxiedP50Ms, alone.proxiedP50Ms)}) | ` +
      `${fmt(r.refreshP50Ms)} / ${fmt(r.refreshP95Ms)} (${ratio(r.refreshP50Ms, alone.refreshP50Ms)}) | ` +
      `${fmt(r.healthzP50Ms)} / ${fmt(r.healthzP95Ms)} | ${r.gatehouseCpuPct.toFixed(0)} % | ` +
      `${r.phase === 'alone' ? '—' : r.attackRps.toFixed(0)} | ${r.shed} | ${r.phase === 'alone' ? '—' : met} |`
    );
  });
  return [
    head,
    `|${head
      .split('|')
      .slice(1, -1)
      .map(() => '---')
      .join('|')}|`,
    ...lines,
  ].join('\n');
}

export async function runFloodSection(): Promise<void> {
  if (cpus().length < 2) throw new Error('the flood bench needs two CPUs: one for Gatehouse, one for the attacker');
  execFileSync('taskset', ['-V'], { stdio: 'ignore' });
  // This process measures from CPU 0, beside the (lower-priority) attacker, never on Gatehouse's CPU.
  execFileSync('taskset', ['-a', '-p', '-c', String(ATTACKER_CPU), String(process.pid)], { stdio: 'ignore' });
  const upstream = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const rows: PhaseResult[] = [];
  try {
    for (let run = 1; run <= RUNS; run++) {
      for (const { name, attack } of PHASES) {
        progress(`run ${run}/${RUNS}: ${name} (${MEASURE_S} s measured)`);
        rows.push(await runPhase(run, name, attack, upstreamUrl));
      }
    }
    process.stdout.write(`\nFloods of unauthenticated work: Gatehouse on CPU ${GATEHOUSE_CPU}, the attacker on CPU ${ATTACKER_CPU}\n${table(rows)}\n`);
    writeResults('flood', rows);
  } finally {
    await new Promise((resolve) => upstream.close(resolve));
    execFileSync('taskset', ['-a', '-p', '-c', `0-${cpus().length - 1}`, String(process.pid)], { stdio: 'ignore' });
  }
}
