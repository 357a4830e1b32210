// The proxy's cost, measured in one run with one load generator on loopback:
// the upstream direct, a bare http-proxy server with no auth, and Gatehouse
// checking a valid bearer token on every request.
import { startGatehouse, loginTokens } from './lib/gatehouse.js';
import { generatorName } from './lib/load.js';
import { measure, settingsFromEnv, type MeasureSettings } from './lib/measure.js';
import { startServer } from './lib/processes.js';
import { printTable, writeResults, type Row } from './lib/report.js';

export async function runProxySection(overrides: Partial<MeasureSettings> = {}): Promise<Row[]> {
  const settings = settingsFromEnv(overrides);
  const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
  const bare = await startServer('bare-http-proxy', ['bench/servers/bare-http-proxy.mjs'], { TARGET: upstream.url });
  const gatehouse = await startGatehouse({ routes: [{ prefix: '/', upstreams: [upstream.url] }] });
  try {
    const tokens = await loginTokens(gatehouse.url);
    const rows = await measure(
      [
        { name: 'upstream direct', url: `${upstream.url}/items/1`, cpuMicros: upstream.cpuMicros },
        { name: 'bare http-proxy (no auth)', url: `${bare.url}/items/1`, cpuMicros: bare.cpuMicros },
        { name: 'gatehouse (bearer)', url: `${gatehouse.url}/items/1`, headers: { authorization: `Bearer ${tokens.access_token}` }, cpuMicros: gatehouse.cpuMicros },
      ],
      settings,
    );
    const [direct, bareRow, gate] = rows as [Row, Row, Row];
    printTable(
      `Proxy: medians of ${settings.rounds} rounds at c=${settings.connections}, ${settings.durationS} s each, ${generatorName()}, one process each`,
      rows,
      'bare http-proxy (no auth)',
    );
    const added = (a: Row, b: Row) => (Number(a.fixedRateP99Ms) - Number(b.fixedRateP99Ms)).toFixed(3);
    process.stdout.write(
      `gatehouse / bare http-proxy: ${(gate.rps! / bareRow.rps!).toFixed(2)}×   gatehouse / direct: ${(gate.rps! / direct.rps!).toFixed(2)}×\n` +
        `p99 at a fixed ${settings.fixedRate} req/s: direct ${Number(direct.fixedRateP99Ms).toFixed(3)} ms, bare ${Number(bareRow.fixedRateP99Ms).toFixed(3)} ms, gatehouse ${Number(gate.fixedRateP99Ms).toFixed(3)} ms ` +
        `(added: ${added(gate, direct)} ms vs direct, ${added(gate, bareRow)} ms vs bare)\n`,
    );
    writeResults('proxy', { settings, rows });
    return rows;
  } finally {
    await Promise.all([gatehouse.stop(), bare.stop(), upstream.stop()]);
  }
}
