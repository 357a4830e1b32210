// What a route rule costs on the proxied path, in one run and one process:
// a route without `authorize` against a route whose rule the caller meets
// (anyRole, checked against the token's roles and the user's current ones),
// and one with a step-up rule it meets (acr, maxAgeS: RFC 9470), interleaved rounds, CPU µs per request from the gateway process.
//
//   npm run bench -- authz        (BENCH_DURATION_S, BENCH_ROUNDS shorten it)
import { loginTokens, startGatehouse, type GatehouseProcess } from './lib/gatehouse.js';
import { generatorName } from './lib/load.js';
import { measure, settingsFromEnv } from './lib/measure.js';
import { startServer, type ServerProcess } from './lib/processes.js';
import { printTable, writeResults } from './lib/report.js';

export async function runAuthzSection(): Promise<void> {
  const servers: Array<ServerProcess | GatehouseProcess> = [];
  try {
    const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
    servers.push(upstream);
    const routes = [
      { prefix: '/free', upstreams: [upstream.url] },
      { prefix: '/ruled', upstreams: [upstream.url], authorize: { anyRole: ['reader'], methods: { POST: { anyRole: ['writer'] } } } },
      { prefix: '/step-up', upstreams: [upstream.url], authorize: { acr: ['urn:gatehouse:acr:password'], maxAgeS: 86_400 } },
    ];
    const gatehouse = await startGatehouse({ routes, logLevel: 'warn', extra: { authorization: { roles: ['reader', 'writer'] }, log: { access: false } } });
    servers.push(gatehouse);
    const headers = { authorization: `Bearer ${(await loginTokens(gatehouse.url)).access_token}` };
    const cpuMicros = () => gatehouse.cpuMicros();
    const settings = settingsFromEnv({ fixedRate: 0 });
    const rows = await measure(
      [
        { name: 'proxied, route without a rule', url: `${gatehouse.url}/free/x`, headers, cpuMicros },
        { name: 'proxied, route with a role rule', url: `${gatehouse.url}/ruled/x`, headers, cpuMicros },
        { name: 'proxied, route with a step-up rule', url: `${gatehouse.url}/step-up/x`, headers, cpuMicros },
      ],
      settings,
    );
    printTable(
      `Route rules (${generatorName()}, c=${settings.connections}, ${settings.rounds} interleaved rounds of ${settings.durationS} s)`,
      rows,
      rows[0]!.name,
    );
    writeResults('authz', { rows });
  } finally {
    await Promise.allSettled(servers.map((server) => server.stop()));
  }
}
