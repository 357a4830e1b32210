// What throttling costs, in one run: API-key login throughput (the login
// path without scrypt, where the throttle's store round trips weigh most)
// with `limits.login` off and on, and the proxied path on a route without
// and with a `rateLimit` (too high to refuse anything), both on Redis.
//
//   BENCH_DURATION_S=5 npm run bench -- limits
import { BENCH_USER, loginTokens, startGatehouse, type GatehouseProcess } from './lib/gatehouse.js';
import { generatorName, load } from './lib/load.js';
import { onRedis } from './lib/redis-section.js';
import { loadRow, printTable, writeResults, type Row } from './lib/report.js';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
const CONNECTIONS = 50;

async function measureOn(
  gatehouse: GatehouseProcess,
  name: string,
  url: string,
  init: { method?: string; headers: Record<string, string>; body?: string },
): Promise<Row> {
  const cpuBefore = gatehouse.cpuMicros();
  const result = await load(url, { connections: CONNECTIONS, durationS: DURATION_S, ...init });
  return loadRow(name, result, gatehouse.cpuMicros() - cpuBefore);
}

export async function runLimitsSection(): Promise<void> {
  await onRedis(async ({ store, upstream, servers }) => {
    const routes = [
      { prefix: '/free', upstreams: [upstream.url] },
      { prefix: '/limited', upstreams: [upstream.url], rateLimit: { points: 1_000_000_000, durationS: 60 } },
    ];
    const loginRows: Row[] = [];
    for (const enabled of [false, true]) {
      const gatehouse = await startGatehouse({ routes, logLevel: 'warn', extra: { store, limits: { login: { enabled } }, log: { access: false } } });
      servers.push(gatehouse);
      const body = JSON.stringify({ username: BENCH_USER, password: gatehouse.apiKey });
      loginRows.push(
        await measureOn(gatehouse, `login (API key), throttling ${enabled ? 'on' : 'off'}`, `${gatehouse.url}/api/v1/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        }),
      );
      if (enabled) {
        const headers = { authorization: `Bearer ${(await loginTokens(gatehouse.url)).access_token}` };
        // Warm both paths up first: the first route measured would otherwise pay for the JIT.
        for (const path of ['/free/x', '/limited/x']) await load(`${gatehouse.url}${path}`, { connections: CONNECTIONS, durationS: 1, headers });
        const proxyRows = [
          await measureOn(gatehouse, 'proxied, route without rateLimit', `${gatehouse.url}/free/x`, { headers }),
          await measureOn(gatehouse, 'proxied, route with rateLimit', `${gatehouse.url}/limited/x`, { headers }),
        ];
        printTable(`Login throttling on Redis (${generatorName()}, c=${CONNECTIONS}, ${DURATION_S} s)`, loginRows, loginRows[0]!.name);
        printTable(`Per-route limit on Redis (${generatorName()}, c=${CONNECTIONS}, ${DURATION_S} s)`, proxyRows, proxyRows[0]!.name);
        writeResults('limits', { login: loginRows, proxy: proxyRows });
      }
    }
  });
}
