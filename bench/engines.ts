// The forwarding engines compared on Gatehouse's real hot path (routing,
// bearer check, header policy, access log), in one run, against the bare
// http-proxy server: the measurement behind the `proxy.engine` default.
import { loginTokens, startGatehouse } from './lib/gatehouse.js';
import { generatorName, load } from './lib/load.js';
import { startServer } from './lib/processes.js';
import { printTable, writeResults, type Row } from './lib/report.js';

const ENGINES = ['http-proxy', 'undici'] as const;

export async function runEnginesSection(durationS = 10, connections = 50): Promise<Row[]> {
  const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
  const bare = await startServer('bare-http-proxy', ['bench/servers/bare-http-proxy.mjs'], { TARGET: upstream.url });
  const rows: Row[] = [];
  try {
    const measure = async (name: string, url: string, cpu: () => number, headers: Record<string, string> = {}) => {
      await load(url, { connections, durationS: 1, headers });
      const before = cpu();
      const result = await load(url, { connections, durationS, headers });
      const single = await load(url, { connections: 1, durationS: Math.min(durationS, 5), headers });
      rows.push({ name, rps: result.rps, p50Ms: result.p50Ms, p99Ms: result.p99Ms, c1P50Ms: single.p50Ms, c1P99Ms: single.p99Ms, cpuUsPerRequest: (cpu() - before) / Math.max(1, result.requests), errors: result.errors + single.errors });
    };
    await measure('bare http-proxy (no auth)', `${bare.url}/items/1`, bare.cpuMicros);
    for (const engine of ENGINES) {
      const gatehouse = await startGatehouse({ routes: [{ prefix: '/', upstreams: [upstream.url] }], extra: { proxy: { engine } } });
      try {
        const tokens = await loginTokens(gatehouse.url);
        await measure(`gatehouse on ${engine}`, `${gatehouse.url}/items/1`, gatehouse.cpuMicros, { authorization: `Bearer ${tokens.access_token}` });
      } finally {
        await gatehouse.stop();
      }
    }
    printTable(`Forwarding engines on Gatehouse's hot path (bearer check on every request), c=${connections}, ${durationS} s, ${generatorName()}`, rows, 'bare http-proxy (no auth)');
    writeResults('engines', rows);
    return rows;
  } finally {
    await Promise.all([bare.stop(), upstream.stop()]);
  }
}
