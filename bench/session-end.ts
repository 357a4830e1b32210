// `npm run bench -- session-end`: what ending everything a session holds open
// costs, and how soon it happens, in one run.
//
// 1. The registry alone: one add and one remove in the session-holdings
//    registry per admitted exchange, in CPU nanoseconds, for a session with
//    another exchange open and for one otherwise idle.
// 2. Whole proxied requests with the registry on and off: the same build,
//    started by the same launcher (bench/engines/gatehouse-on-engine.ts,
//    BENCH_SESSION_HOLDINGS=off makes add and remove empty), measured in
//    rounds paired in both orders; CPU µs per request from each process.
// 3. The latency from a revocation to the end of a stream it ends: an event
//    stream held open through instance B, its session logged out (or its API
//    key revoked) through instance A, or its user disabled in the users file
//    both watch, both processes on a real redis-server; and on one instance
//    with the in-memory store. BENCH_SESSION_END_ROUNDS rounds per case
//    (default 50), interleaved in batches of ten; p50, p95 and max in ms
//    from the moment the revocation was sent (the users file: written).
//
// Figures, not assertions: docs/guides/session-end.md quotes them.
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Principal } from '../src/core/principal.js';
import { SessionHoldings, type Holding } from '../src/proxy/session-holdings.js';
import { startRedisServer, type RedisServerHandle } from '../test/helpers/redis-server.js';
import { BENCH_PASSWORD, BENCH_USER, loginTokens, startGatehouse, type GatehouseProcess } from './lib/gatehouse.js';
import { generatorName, load } from './lib/load.js';
import { settingsFromEnv } from './lib/measure.js';
import { startServer, type ServerProcess } from './lib/processes.js';
import { printTable, writeResults } from './lib/report.js';
import {
  addUsers,
  byApiKeyRevocation,
  byLogout,
  byUserDisabled,
  measureRevocations,
  type PreparedSession,
  type RevocationSample,
} from './lib/revocation-latency.js';
import { median, percentile } from './lib/stats.js';

const say = (line: string) => process.stdout.write(`[session-end] ${line}\n`);
const loadAverage = () =>
  `load average ${loadavg()
    .map((n) => n.toFixed(2))
    .join(', ')}`;

/** CPU time of one add and one remove, as the proxy does per admitted exchange (a session with other exchanges open, and without). */
function measureRegistry(): Record<string, number> {
  const holdings = new SessionHoldings({
    sessions: { onSessionEnded: () => () => {} },
    identity: { isActive: () => true, onChange: () => () => {} },
    logger: pino({ level: 'silent' }),
  });
  const now = Date.now();
  const principal: Principal = {
    sub: 's',
    username: 'u',
    sid: 'sid-1',
    tokenType: 'Bearer',
    method: 'pwd',
    expiresAtMs: now + 3_600_000,
    sessionEndsAtMs: now + 86_400_000,
    roles: [],
    scopes: undefined,
    readOnly: false,
  };
  class Exchange implements Holding {
    readonly principal = principal;
    get kind(): 'http' {
      return 'http';
    }
    end(): void {}
  }
  const exchanges = Array.from({ length: 1024 }, () => new Exchange());
  const open = new Exchange();
  holdings.add(open, false); // the session is known (as after its first request)
  const rounds = 2_000_000;
  const figures: Record<string, number> = {};
  for (const [label, keepOpen] of [
    ['session with another exchange open', true],
    ['session otherwise idle', false],
  ] as const) {
    if (!keepOpen) holdings.remove(open);
    const started = process.cpuUsage();
    for (let i = 0; i < rounds; i++) {
      const exchange = exchanges[i & 1023]!;
      holdings.add(exchange, false);
      holdings.remove(exchange);
    }
    const used = process.cpuUsage(started);
    figures[label] = ((used.user + used.system) * 1000) / rounds;
    say(`registry add+remove (${label}): ${figures[label]!.toFixed(0)} ns CPU per exchange`);
  }
  holdings.close();
  return figures;
}

/**
 * Whole proxied requests, the registry on against off, in one run: rounds in
 * pairs, on then off and off then on (neither always has the warmer machine),
 * CPU µs per request from each process, and the median of the paired differences.
 */
async function measureHotPath(upstream: ServerProcess, started: GatehouseProcess[]) {
  const settings = settingsFromEnv();
  const pairs = Math.max(2, settings.rounds);
  const routes = [{ prefix: '/', upstreams: [upstream.url] }];
  const rows = [];
  for (const holdings of ['on', 'off'] as const) {
    // The account page is off: its files are not copied next to the launcher's build, and it is not on the proxy's path.
    const gatehouse = await startGatehouse({ routes, engine: 'undici', env: { BENCH_SESSION_HOLDINGS: holdings }, extra: { account: { enabled: false } } });
    started.push(gatehouse);
    const tokens = await loginTokens(gatehouse.url);
    rows.push({
      name: `registry ${holdings}`,
      gatehouse,
      headers: { authorization: `Bearer ${tokens.access_token}` },
      cpu: [] as number[],
      rps: [] as number[],
      errors: 0,
    });
  }
  const [on, off] = rows as [(typeof rows)[0], (typeof rows)[0]];
  for (let round = 0; round < pairs * 2; round++) {
    for (const row of round % 2 === 0 ? [on, off] : [off, on]) {
      const url = `${row.gatehouse.url}/items/1`;
      await load(url, { connections: settings.connections, durationS: 1, headers: row.headers }); // warm-up
      const before = row.gatehouse.cpuMicros();
      const result = await load(url, { connections: settings.connections, durationS: settings.durationS, headers: row.headers });
      row.cpu.push((row.gatehouse.cpuMicros() - before) / Math.max(1, result.requests));
      row.rps.push(result.rps);
      row.errors += result.errors;
      say(`  round ${round + 1}/${pairs * 2} ${row.name}: ${result.rps.toFixed(0)} req/s, ${row.cpu.at(-1)!.toFixed(1)} µs CPU/req`);
    }
  }
  const differences = on.cpu.map((cpu, i) => cpu - off.cpu[i]!);
  const table = rows.map((row) => ({ name: row.name, rps: median(row.rps), cpuUsPerRequest: median(row.cpu), errors: row.errors }));
  printTable(
    `Proxied requests with the session-holdings registry on and off (same build and launcher): medians of ${pairs * 2} rounds in pairs, ` +
      `c=${settings.connections}, ${settings.durationS} s, ${generatorName()}, in-memory store; ${loadAverage()}`,
    table,
    'registry off',
  );
  say(
    `registry on − off, paired by round: median ${median(differences).toFixed(1)} µs CPU per request ` +
      `(rounds: ${differences.map((d) => d.toFixed(1)).join(', ')})`,
  );
  return { settings, rows: table, differences };
}

interface LatencyCase {
  name: string;
  streamUrl: string;
  prepare(): Promise<PreparedSession>;
  samples: RevocationSample[];
}

const ms = (n: number) => n.toFixed(1).padStart(7);

/** Revocation → stream end, on two instances sharing Redis and on one with the in-memory store. */
async function measureLatency(upstream: ServerProcess, started: GatehouseProcess[], redisUrl: string) {
  const rounds = Number(process.env.BENCH_SESSION_END_ROUNDS ?? 50);
  const routes = [{ prefix: '/', upstreams: [upstream.url] }];
  const store = { url: redisUrl };
  // Load shedding off: on a machine this loaded it answers some logouts 503, and what is measured is a session's end, not shedding.
  const limits = { loadShedding: { enabled: false } };
  const a = await startGatehouse({ routes, extra: { store, limits } });
  started.push(a);
  // One deployment: instance B reads A's users file and keys file, and signs as the same issuer.
  const b = await startGatehouse({
    routes,
    identity: { provider: 'local', usersFile: join(a.dir, 'users.yaml') },
    extra: { store, limits, tokens: { issuer: a.url, keysFile: join(a.dir, 'keys.json') } },
  });
  started.push(b);
  const memory = await startGatehouse({ routes, extra: { limits } });
  started.push(memory);
  // Users to disable, one per round, in the users file each deployment watches.
  const disabledOnRedis = await addUsers(join(a.dir, 'users.yaml'), 'disabled', rounds, BENCH_PASSWORD, [a.url, b.url]);
  const disabledInMemory = await addUsers(join(memory.dir, 'users.yaml'), 'disabled', rounds, BENCH_PASSWORD, [memory.url]);
  const onB = `${b.url}/events`;
  const inMemory = `${memory.url}/events`;
  const cases: LatencyCase[] = [
    { name: 'Redis, logout on A, stream on B', streamUrl: onB, prepare: byLogout(a.url, BENCH_USER, BENCH_PASSWORD), samples: [] },
    { name: 'Redis, API key revoked on A, stream on B', streamUrl: onB, prepare: byApiKeyRevocation(a.url, BENCH_USER, BENCH_PASSWORD), samples: [] },
    {
      name: 'Redis, user disabled in the users file, stream on B',
      streamUrl: onB,
      prepare: byUserDisabled(a.url, join(a.dir, 'users.yaml'), disabledOnRedis, BENCH_PASSWORD),
      samples: [],
    },
    { name: 'in-memory, logout, one instance', streamUrl: inMemory, prepare: byLogout(memory.url, BENCH_USER, BENCH_PASSWORD), samples: [] },
    { name: 'in-memory, API key revoked, one instance', streamUrl: inMemory, prepare: byApiKeyRevocation(memory.url, BENCH_USER, BENCH_PASSWORD), samples: [] },
    {
      name: 'in-memory, user disabled in the users file, one instance',
      streamUrl: inMemory,
      prepare: byUserDisabled(memory.url, join(memory.dir, 'users.yaml'), disabledInMemory, BENCH_PASSWORD),
      samples: [],
    },
  ];
  say(`revocation → stream end: ${rounds} rounds per case, in batches of 10; ${loadAverage()}`);
  for (let done = 0; done < rounds; done += 10) {
    const batch = Math.min(10, rounds - done);
    for (const latency of cases)
      latency.samples.push(...(await measureRevocations({ label: latency.name, streamUrl: latency.streamUrl, rounds: batch, prepare: latency.prepare })));
    say(`  ${done + batch}/${rounds} rounds of each case`);
  }
  const width = Math.max(...cases.map((c) => c.name.length));
  say(`ms from the revocation sent to the stream's clean end (p50, p95, max), and to the revocation's own answer (p50):`);
  say(`${'case'.padEnd(width)} | rounds |     p50 |     p95 |     max | answered p50`);
  const summary = cases.map(({ name, samples }) => {
    const ended = samples.map((s) => s.streamEndedMs);
    const answered = samples.map((s) => s.answeredMs);
    const row = {
      name,
      rounds: samples.length,
      p50: percentile(ended, 0.5),
      p95: percentile(ended, 0.95),
      max: Math.max(...ended),
      answeredP50: percentile(answered, 0.5),
    };
    say(`${name.padEnd(width)} | ${String(row.rounds).padStart(6)} | ${ms(row.p50)} | ${ms(row.p95)} | ${ms(row.max)} | ${ms(row.answeredP50).padStart(12)}`);
    return row;
  });
  say(`(${loadAverage()})`);
  return summary;
}

export async function runSessionEndSection(): Promise<void> {
  say(`start; ${loadAverage()}`);
  const registry = measureRegistry();
  const started: GatehouseProcess[] = [];
  let upstream: ServerProcess | undefined;
  let redis: RedisServerHandle | undefined;
  try {
    upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
    const redisUrl = process.env.BENCH_REDIS_URL ?? (redis = await startRedisServer()).url;
    const hotPath = await measureHotPath(upstream, started);
    const latency = await measureLatency(upstream, started, redisUrl);
    writeResults('session-end', { loadAverage: loadavg(), registry, hotPath, latency });
  } finally {
    await Promise.all([...started.map((gatehouse) => gatehouse.stop()), upstream?.stop()]);
    await redis?.close();
  }
}
