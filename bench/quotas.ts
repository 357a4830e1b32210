// What route quotas cost on the proxied path, in one run and one process on
// Redis: a route without quotas, a route with one limit, and a route with
// three (a per-subject rate, a per-subject daily quota, a per-tenant daily
// quota), all too large to refuse anything; interleaved rounds, CPU µs per
// request from the gateway process. A request's limits are weighed in
// parallel: three limits are three scripts in one round trip's time.
//
//   npm run bench -- quotas        (BENCH_DURATION_S, BENCH_ROUNDS shorten it)
import { loginTokens, startGatehouse } from './lib/gatehouse.js';
import { generatorName } from './lib/load.js';
import { measure, settingsFromEnv } from './lib/measure.js';
import { onRedis } from './lib/redis-section.js';
import { printTable, writeResults } from './lib/report.js';

/** Requests an hour (and a day) that a run of this section never reaches. */
const NEVER_REFUSED = 10_000_000;

export async function runQuotasSection(): Promise<void> {
  await onRedis(async ({ store, upstream, servers }) => {
    const rate = { name: 'per-hour', by: 'subject', per: 'hour', limit: NEVER_REFUSED };
    const routes = [
      { prefix: '/free', upstreams: [upstream.url] },
      { prefix: '/one', upstreams: [upstream.url], quotas: [rate] },
      {
        prefix: '/three',
        upstreams: [upstream.url],
        quotas: [
          rate,
          { name: 'daily', by: 'subject', per: 'day', limit: NEVER_REFUSED },
          { name: 'tenant-daily', by: 'claim:groups', per: 'day', limit: NEVER_REFUSED },
        ],
      },
    ];
    const gatehouse = await startGatehouse({ routes, logLevel: 'warn', extra: { store, log: { access: false } } });
    servers.push(gatehouse);
    const headers = { authorization: `Bearer ${(await loginTokens(gatehouse.url)).access_token}` };
    const cpuMicros = () => gatehouse.cpuMicros();
    const settings = settingsFromEnv({ fixedRate: 0 });
    const rows = await measure(
      [
        { name: 'proxied, route without quotas', url: `${gatehouse.url}/free/x`, headers, cpuMicros },
        { name: 'proxied, route with one limit', url: `${gatehouse.url}/one/x`, headers, cpuMicros },
        { name: 'proxied, route with three limits', url: `${gatehouse.url}/three/x`, headers, cpuMicros },
      ],
      settings,
    );
    printTable(
      `Route quotas on Redis (${generatorName()}, c=${settings.connections}, ${settings.rounds} interleaved rounds of ${settings.durationS} s)`,
      rows,
      rows[0]!.name,
    );
    writeResults('quotas', { rows });
  });
}
