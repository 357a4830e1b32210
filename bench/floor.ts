// How close an authenticated proxied request comes to the Node floor, and
// what each feature adds, in one run: the floor is the simplest Node proxy
// (a node:http server piping each request through a keep-alive http.Agent,
// no checks: bench/servers/node-floor.mjs; http-proxy on the same agent, the
// proxy section's baseline, is a row beside it), and every Gatehouse row checks a cached
// access token with the access line and metrics on (their defaults) unless
// its name says otherwise: the TLS row is a listener with `server.tls`
// (connections kept alive: a handshake per connection, not per request), the
// DPoP row a bound token with a new proof per request, signed in this process
// (bench/lib/dpop-load.ts), so its client bounds it. Rows are interleaved round by round; the figure is
// CPU µs per request of the serving process (steadier than req/s, which moves
// with the machine), with c=1 latency beside it.
//
//   npm run bench -- floor    (BENCH_DURATION_S, BENCH_ROUNDS; BENCH_FLOOR_TARGET, default 1.15)
//
// The guard: the run fails (exit code 1) when Gatehouse's CPU per request is
// above the target times the floor's, so a change that costs more is seen.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedisServer, type RedisServerHandle } from '../test/helpers/redis-server.js';
import { makeTlsPair } from '../test/helpers/tls-pair.js';
import { clientKey, dpopLogin, dpopLoad } from './lib/dpop-load.js';
import { loginOverTls, loginTokens, startGatehouse, type GatehouseProcess } from './lib/gatehouse.js';
import { generatorName } from './lib/load.js';
import { measure, settingsFromEnv, type CpuRounds, type Subject } from './lib/measure.js';
import { startServer, type ServerProcess } from './lib/processes.js';
import { printTable, writeResults } from './lib/report.js';

const FLOOR = 'Node floor (node:http + keep-alive http.Agent, no checks)';
const GATEHOUSE = 'gatehouse, defaults (access line, metrics)';
const DPOP_ROW = 'gatehouse, DPoP-bound token (a new EdDSA proof per request, Redis jti)';
/** The DPoP row's requests in flight: its client signs every proof in the bench process, which more would only queue. */
const DPOP_IN_FLIGHT = 8;
const say = (line: string) => process.stdout.write(`[floor] ${line}\n`);

export async function runFloorSection(): Promise<boolean> {
  const target = Number(process.env.BENCH_FLOOR_TARGET ?? 1.15);
  const settings = settingsFromEnv({ fixedRate: 0, rounds: Number(process.env.BENCH_ROUNDS ?? 5), durationS: Number(process.env.BENCH_DURATION_S ?? 5) });
  const servers: Array<ServerProcess | GatehouseProcess> = [];
  const tlsDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-floor-'));
  let redis: RedisServerHandle | undefined;
  try {
    redis = await startRedisServer();
    const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
    const floor = await startServer('node-floor', ['bench/servers/node-floor.mjs'], { TARGET: upstream.url });
    const httpProxy = await startServer('bare-http-proxy', ['bench/servers/bare-http-proxy.mjs'], { TARGET: upstream.url });
    const sink = await startServer('otlp-sink', ['bench/servers/otlp-sink.mjs']);
    servers.push(upstream, floor, httpProxy, sink);
    const routes = [
      { prefix: '/plain', upstreams: [upstream.url] },
      { prefix: '/ruled', upstreams: [upstream.url], authorize: { anyRole: ['reader'] } },
      { prefix: '/limited', upstreams: [upstream.url], rateLimit: { points: 1_000_000_000, durationS: 60 } },
      { prefix: '/asserted', upstreams: [upstream.url], identityAssertion: { lifetimeS: 60 } },
    ];
    const store = { url: redis.url };
    const authorization = { roles: ['reader'] };
    const main = await startGatehouse({ routes, extra: { store, authorization } });
    const quiet = await startGatehouse({ routes, extra: { store, authorization, log: { access: false } } });
    const traced = await startGatehouse({ routes, extra: { store, authorization, tracing: { otlpEndpoint: `${sink.url}/v1/traces` } } });
    const pair = makeTlsPair(tlsDir, 'bench', 0x5002);
    const secure = await startGatehouse({ routes, extra: { store, authorization, server: { tls: { certFile: pair.certFile, keyFile: pair.keyFile } } } });
    servers.push(main, quiet, traced, secure);
    const secureUrl = secure.url.replace('http://', 'https://');
    const bearer = async (g: GatehouseProcess) => ({ authorization: `Bearer ${(await loginTokens(g.url)).access_token}` });
    const [mainHeaders, quietHeaders, tracedHeaders] = [await bearer(main), await bearer(quiet), await bearer(traced)];
    const secureHeaders = { authorization: `Bearer ${await loginOverTls(secureUrl, pair.cert)}` };
    // A DPoP-bound token: every request signs a new proof (EdDSA, the cheapest to sign and check) in this process.
    const key = await clientKey('EdDSA');
    const boundToken = await dpopLogin(main.url, key);
    const dpopUrl = `${main.url}/plain/items/1`;
    const row = (name: string, g: GatehouseProcess, path: string, headers: Record<string, string>): Subject => ({
      name,
      url: `${g.url}${path}`,
      headers,
      cpuMicros: g.cpuMicros,
    });
    // Gatehouse's row right after the floor's: each round's pair is measured as close together as can be.
    const subjects: Subject[] = [
      { name: FLOOR, url: `${floor.url}/items/1`, cpuMicros: floor.cpuMicros },
      row(GATEHOUSE, main, '/plain/items/1', mainHeaders),
      { name: 'http-proxy on the same agent (no checks)', url: `${httpProxy.url}/items/1`, cpuMicros: httpProxy.cpuMicros },
      row('gatehouse, access line off', quiet, '/plain/items/1', quietHeaders),
      row('gatehouse, tracing on (OTLP export)', traced, '/plain/items/1', tracedHeaders),
      row('gatehouse, route with a role rule', main, '/ruled/items/1', mainHeaders),
      row('gatehouse, route with a rate limit (Redis)', main, '/limited/items/1', mainHeaders),
      row('gatehouse, route with a signed identity assertion', main, '/asserted/items/1', mainHeaders),
      { name: 'gatehouse, TLS (HTTP/1.1, kept-alive connections)', url: `${secureUrl}/plain/items/1`, headers: secureHeaders, cpuMicros: secure.cpuMicros },
      {
        name: DPOP_ROW,
        url: dpopUrl,
        cpuMicros: main.cpuMicros,
        run: (connections, durationS) => dpopLoad(dpopUrl, { key, token: boundToken, connections: Math.min(connections, DPOP_IN_FLIGHT), durationS }),
      },
    ];
    say(`${subjects.length} rows, ${settings.rounds} interleaved rounds of ${settings.durationS} s at c=${settings.connections}, then c=1`);
    const cpuRounds: CpuRounds = new Map();
    const rows = await measure(subjects, settings, cpuRounds);
    const floorRow = rows.find((r) => r.name === FLOOR)!;
    for (const r of rows) {
      if (r.cpuUsPerRequest !== undefined && floorRow.cpuUsPerRequest) r.note = `${(r.cpuUsPerRequest / floorRow.cpuUsPerRequest).toFixed(2)}× floor CPU`;
    }
    printTable(`The floor and each feature's price: medians of ${settings.rounds} rounds, ${generatorName()}, Gatehouse on Redis`, rows, FLOOR);
    const gate = rows.find((r) => r.name === GATEHOUSE)!;
    // Each round's own ratio too, to show the spread: a shared host's speed
    // moves within seconds (the same build read 69 to 108 µs a request in
    // one run), so no single pair of runs is the figure; the medians are.
    const floorRounds = cpuRounds.get(FLOOR)!;
    const roundRatios = cpuRounds.get(GATEHOUSE)!.map((cpu, i) => cpu / floorRounds[i]!);
    const ratio = gate.cpuUsPerRequest! / floorRow.cpuUsPerRequest!;
    say(`each round's ratio to the floor: ${roundRatios.map((r) => `${r.toFixed(2)}×`).join(', ')}`);
    const addedP99 = gate.c1P99Ms! - floorRow.c1P99Ms!;
    const held = ratio <= target;
    say(
      `CPU per request ${gate.cpuUsPerRequest!.toFixed(1)} µs against the floor's ${floorRow.cpuUsPerRequest!.toFixed(1)} µs (medians): ` +
        `${ratio.toFixed(2)}× (target ≤ ${target}×) ${held ? 'held' : 'MISSED'}; c=1 p99 ${addedP99 >= 0 ? '+' : ''}${addedP99.toFixed(3)} ms (target ≤ +0.3)`,
    );
    writeResults('floor', { settings, target, ratio, roundRatios, rows });
    if (!held) process.exitCode = 1;
    return held;
  } finally {
    await Promise.allSettled(servers.map((s) => s.stop()));
    await redis?.close();
    rmSync(tlsDir, { recursive: true, force: true });
  }
}
