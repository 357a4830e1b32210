// The proxy's cost, measured in one run with one load generator on loopback:
// the upstream direct, a bare http-proxy server with no auth, and Gatehouse
// checking a valid bearer token on every request. Throughput and latency at
// c=50, latency at c=1, CPU per request, and p99 at a fixed moderate rate.
import { startGatehouse, loginTokens } from './lib/gatehouse.js';
import { generatorName, load, type LoadOptions } from './lib/load.js';
import { startServer, type ServerProcess } from './lib/processes.js';
import { printTable, writeResults, type Row } from './lib/report.js';

export interface ProxyBenchOptions {
  durationS?: number;
  connections?: number;
  /** Requests per second of the fixed-rate latency run. */
  fixedRate?: number;
}

interface Subject {
  name: string;
  server: ServerProcess;
  url: string;
  headers?: Record<string, string>;
}

async function measure(subject: Subject, options: Required<ProxyBenchOptions>): Promise<Row> {
  const base: LoadOptions = { connections: options.connections, durationS: options.durationS, headers: subject.headers ?? {} };
  await load(subject.url, { ...base, durationS: 1 }); // warm-up: JIT, keep-alive pools, token cache
  const cpuBefore = subject.server.cpuMicros();
  const main = await load(subject.url, base);
  const cpuUsPerRequest = (subject.server.cpuMicros() - cpuBefore) / Math.max(1, main.requests);
  const single = await load(subject.url, { ...base, connections: 1 });
  const paced = await load(subject.url, { ...base, connections: 10, rate: options.fixedRate });
  return {
    name: subject.name,
    rps: main.rps,
    p50Ms: main.p50Ms,
    p99Ms: main.p99Ms,
    c1P50Ms: single.p50Ms,
    c1P99Ms: single.p99Ms,
    cpuUsPerRequest,
    fixedRateP99Ms: paced.p99Ms,
    errors: main.errors + single.errors + paced.errors,
  };
}

export async function runProxySection(options: ProxyBenchOptions = {}): Promise<Row[]> {
  const settings: Required<ProxyBenchOptions> = { durationS: 10, connections: 50, fixedRate: 2000, ...options };
  const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
  const bare = await startServer('bare-http-proxy', ['bench/servers/bare-http-proxy.mjs'], { TARGET: upstream.url });
  const gatehouse = await startGatehouse({ routes: [{ prefix: '/', upstreams: [upstream.url] }] });
  try {
    const tokens = await loginTokens(gatehouse.url);
    const subjects: Subject[] = [
      { name: 'upstream direct', server: upstream, url: `${upstream.url}/items/1` },
      { name: 'bare http-proxy (no auth)', server: bare, url: `${bare.url}/items/1` },
      { name: 'gatehouse (bearer)', server: gatehouse, url: `${gatehouse.url}/items/1`, headers: { authorization: `Bearer ${tokens.access_token}` } },
    ];
    const rows: Row[] = [];
    for (const subject of subjects) rows.push(await measure(subject, settings));
    const [direct, bareRow, gate] = rows as [Row, Row, Row];
    printTable(
      `Proxy, c=${settings.connections}, ${settings.durationS} s, ${generatorName()}, one process each; fixed-rate p99 at ${settings.fixedRate} req/s`,
      rows,
      'bare http-proxy (no auth)',
    );
    process.stdout.write(
      `gatehouse / bare http-proxy: ${(gate.rps! / bareRow.rps!).toFixed(2)}×   gatehouse / direct: ${(gate.rps! / direct.rps!).toFixed(2)}×\n` +
        `p99 added at ${settings.fixedRate} req/s: vs direct ${(Number(gate.fixedRateP99Ms) - Number(direct.fixedRateP99Ms)).toFixed(2)} ms, vs bare ${(Number(gate.fixedRateP99Ms) - Number(bareRow.fixedRateP99Ms)).toFixed(2)} ms\n`,
    );
    writeResults('proxy', { settings, rows });
    return rows;
  } finally {
    await Promise.all([gatehouse.stop(), bare.stop(), upstream.stop()]);
  }
}
