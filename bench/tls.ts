// What TLS and HTTP/2 on the public listener cost, in one run: Gatehouse over
// plain HTTP/1.1, over TLS with HTTP/1.1 and with h2 (one process serves
// both: ALPN decides), against a bare http-proxy (plain, the baseline) and the
// simplest Node TLS proxy (node:https + http-proxy). Every Gatehouse row
// checks a valid bearer token. Connections are kept alive, so the rows are
// the steady cost per request (a handshake per connection, not per request).
// h2 is driven by h2load (bench/lib/h2load.ts; wrk and autocannon speak
// HTTP/1.1 only): as many connections as the HTTP/1.1 rows, one stream each,
// and the same requests in flight over a tenth of the connections, with the
// h2 floor (node:http2, the least a proxy can do) beside them; their c=1
// latencies come from a Node h2 client (bench/lib/h2-load.ts). The run exits
// 1 when h2 at 10 streams costs more than 1.2× TLS HTTP/1.1's CPU per request:
// the median of BENCH_H2_PAIRS (default 10) pairs of the two in 2 s runs
// taking turns, after the rounds.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTlsPair } from '../test/helpers/tls-pair.js';
import { loginOverTls, loginTokens, startGatehouse, type GatehouseProcess } from './lib/gatehouse.js';
import { h2Load } from './lib/h2-load.js';
import { h2load } from './lib/h2load.js';
import { drive, measure, settingsFromEnv, type MeasureSettings, type Subject } from './lib/measure.js';
import { alternatingPairs } from './lib/paired.js';
import { startServer, type ServerProcess } from './lib/processes.js';
import { printTable, writeResults, type Row } from './lib/report.js';
import { median } from './lib/stats.js';

const BASELINE = 'bare http-proxy, plain HTTP/1.1 (no auth)';
const TLS_HTTP1 = 'gatehouse, TLS HTTP/1.1';
const H2_TEN = 'gatehouse, h2 (10 streams per connection)';
const H2_FLOOR = 'h2 floor: node:http2 proxy, 10 streams per connection (no auth)';
/** h2 at 10 streams per connection may cost at most this times TLS HTTP/1.1's CPU per request. */
const H2_TARGET = 1.2;
/** Seconds of each run of a guard pair: short, so both rows of a pair see the same machine. */
const H2_PAIR_S = 2;

/** A login refused with 503 (the gateway shedding load on a machine busy with other work) is asked again, a second later. */
async function whenServed<T>(login: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await login();
    } catch (error) {
      if (attempt >= 30 || !/503|overloaded/.test(String(error))) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

export async function runTlsSection(overrides: Partial<MeasureSettings> = {}): Promise<Row[]> {
  // No fixed-rate run: autocannon's pacing speaks HTTP/1.1 only; the rows are compared at full load and at c=1.
  const settings = settingsFromEnv({ fixedRate: 0, ...overrides });
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-tls-'));
  const servers: Array<ServerProcess | GatehouseProcess> = [];
  try {
    const pair = makeTlsPair(dir, 'bench', 0x5001);
    const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
    servers.push(upstream);
    const bare = await startServer('bare-http-proxy', ['bench/servers/bare-http-proxy.mjs'], { TARGET: upstream.url });
    const bareTls = await startServer('bare-tls-proxy', ['bench/servers/bare-http-proxy.mjs'], {
      TARGET: upstream.url,
      CERT_FILE: pair.certFile,
      KEY_FILE: pair.keyFile,
    });
    servers.push(bare, bareTls);
    const routes = [{ prefix: '/', upstreams: [upstream.url] }];
    const plain = await startGatehouse({ routes });
    const secure = await startGatehouse({ routes, extra: { server: { tls: { certFile: pair.certFile, keyFile: pair.keyFile } } } });
    servers.push(plain, secure);
    const secureUrl = secure.url.replace('http://', 'https://');
    const plainToken = (await whenServed(() => loginTokens(plain.url))).access_token;
    const secureToken = await whenServed(() => loginOverTls(secureUrl, pair.cert));
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    // As many requests in flight as the HTTP/1.1 rows, `perConnection` of them on each connection; c=1 from a Node client.
    const h2 = (url: string, perConnection: number, headers: Record<string, string>) => (connections: number, durationS: number) => {
      const spread = { connections: Math.max(1, Math.round(connections / perConnection)), streams: Math.min(perConnection, connections), durationS, headers };
      return connections === 1 ? h2Load(url, { ...spread, ca: pair.cert }) : h2load(url, spread);
    };
    const h2Floor = await startServer('node-h2-floor', ['bench/servers/node-h2-floor.mjs'], {
      TARGET: upstream.url,
      CERT_FILE: pair.certFile,
      KEY_FILE: pair.keyFile,
    });
    servers.push(h2Floor);
    const h2FloorUrl = `${h2Floor.url.replace('http://', 'https://')}/items/1`;
    const bareTlsUrl = bareTls.url.replace('http://', 'https://');
    const subjects: Subject[] = [
      { name: BASELINE, url: `${bare.url}/items/1`, cpuMicros: bare.cpuMicros },
      { name: 'bare node:https proxy, TLS HTTP/1.1 (no auth)', url: `${bareTlsUrl}/items/1`, ca: pair.cert, cpuMicros: bareTls.cpuMicros },
      { name: 'gatehouse, plain HTTP/1.1', url: `${plain.url}/items/1`, headers: bearer(plainToken), cpuMicros: plain.cpuMicros },
      { name: TLS_HTTP1, url: `${secureUrl}/items/1`, headers: bearer(secureToken), ca: pair.cert, cpuMicros: secure.cpuMicros },
      { name: H2_FLOOR, url: h2FloorUrl, cpuMicros: h2Floor.cpuMicros, run: h2(h2FloorUrl, 10, {}) },
      {
        name: 'gatehouse, h2 (1 stream per connection)',
        url: `${secureUrl}/items/1`,
        cpuMicros: secure.cpuMicros,
        run: h2(`${secureUrl}/items/1`, 1, bearer(secureToken)),
      },
      { name: H2_TEN, url: `${secureUrl}/items/1`, cpuMicros: secure.cpuMicros, run: h2(`${secureUrl}/items/1`, 10, bearer(secureToken)) },
    ];
    const loadBefore = loadavg();
    const rows = await measure(subjects, settings);
    const loadAfter = loadavg();
    const loadNote = `load average ${loadBefore[0]!.toFixed(2)} before, ${loadAfter[0]!.toFixed(2)} after`;
    printTable(`TLS and HTTP/2 (c=${settings.connections}, ${settings.rounds}×${settings.durationS} s, medians; ${loadNote})`, rows, BASELINE);
    const rowsPrice = rows.find((r) => r.name === H2_TEN)!.cpuUsPerRequest! / rows.find((r) => r.name === TLS_HTTP1)!.cpuUsPerRequest!;
    process.stdout.write(`[tls] h2 at 10 streams against TLS HTTP/1.1, the rows' medians: ${rowsPrice.toFixed(2)}× (reported; the guard reads the pairs)\n`);
    // The guard: the two rows again in short runs taking turns (bench/lib/paired.ts), rounds apart they read 1.17× to 1.47× in one hour.
    const [tlsSubject, h2Subject] = [subjects.find((s) => s.name === TLS_HTTP1)!, subjects.find((s) => s.name === H2_TEN)!];
    const pairs = Number(process.env.BENCH_H2_PAIRS ?? 10);
    const side = (subject: Subject) => ({
      run: () => drive(subject, settings.connections, H2_PAIR_S),
      cpuMicros: secure.cpuMicros,
    });
    const readings = await alternatingPairs(side(tlsSubject), side(h2Subject), pairs, ({ a: tlsCpu, b: h2Cpu }, i) => {
      process.stdout.write(
        `[tls] pair ${i + 1}/${pairs}: TLS HTTP/1.1 ${tlsCpu.toFixed(0)} µs, h2 at 10 streams ${h2Cpu.toFixed(0)} µs: ${(h2Cpu / tlsCpu).toFixed(2)}×\n`,
      );
    });
    const pairRatios = readings.map(({ a: tlsCpu, b: h2Cpu }) => h2Cpu / tlsCpu);
    const price = median(pairRatios);
    const held = price <= H2_TARGET;
    process.stdout.write(
      `[tls] h2 at 10 streams against TLS HTTP/1.1, CPU per request, median of ${pairs} pairs: ${price.toFixed(2)}× ` +
        `(target ≤ ${H2_TARGET}×) ${held ? 'held' : 'MISSED'}\n`,
    );
    writeResults('tls', { settings, loadBefore, loadAfter, h2Price: price, h2PairRatios: pairRatios, h2RowsPrice: rowsPrice, rows });
    if (!held) process.exitCode = 1;
    return rows;
  } finally {
    for (const server of servers.reverse()) await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
