// The forwarding engines compared on Gatehouse's real hot path (routing,
// bearer check, header policy, access log), in one run, against the bare
// http-proxy server: the measurement behind forwarding with undici. The
// comparison engines live here in bench/engines/, not in the product.
import { loginTokens, startGatehouse } from './lib/gatehouse.js';
import { generatorName } from './lib/load.js';
import { measure, settingsFromEnv, type MeasureSettings, type Subject } from './lib/measure.js';
import { startServer } from './lib/processes.js';
import { printTable, writeResults, type Row } from './lib/report.js';

const ENGINES = ['http-proxy', 'http-proxy-3', 'undici'] as const;

export async function runEnginesSection(overrides: Partial<MeasureSettings> = {}): Promise<Row[]> {
  const settings = { ...settingsFromEnv(overrides), fixedRate: 0 };
  const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
  const bare = await startServer('bare-http-proxy', ['bench/servers/bare-http-proxy.mjs'], { TARGET: upstream.url });
  const gatehouses = [];
  try {
    const subjects: Subject[] = [{ name: 'bare http-proxy (no auth)', url: `${bare.url}/items/1`, cpuMicros: bare.cpuMicros }];
    for (const engine of ENGINES) {
      const gatehouse = await startGatehouse({ routes: [{ prefix: '/', upstreams: [upstream.url] }], engine });
      gatehouses.push(gatehouse);
      const tokens = await loginTokens(gatehouse.url);
      subjects.push({
        name: `gatehouse on ${engine}`,
        url: `${gatehouse.url}/items/1`,
        headers: { authorization: `Bearer ${tokens.access_token}` },
        cpuMicros: gatehouse.cpuMicros,
      });
    }
    const rows = await measure(subjects, settings);
    printTable(
      "Forwarding engines on Gatehouse's hot path (bearer check on every request): " +
        `medians of ${settings.rounds} rounds, c=${settings.connections}, ${settings.durationS} s, ${generatorName()}`,
      rows,
      'bare http-proxy (no auth)',
    );
    writeResults('engines', { settings, rows });
    return rows;
  } finally {
    await Promise.all([...gatehouses.map((g) => g.stop()), bare.stop(), upstream.stop()]);
  }
}
