// What fronting an OpenID Provider costs on the proxied path, in one run:
// Gatehouse's own access token (local mode) against a provider's JWT access
// token (verified against its key set) and a provider's refresh token used as
// a bearer (spec 5.9: introspected at the provider, then cached). Two gateway
// processes, one provider (oidc-provider, in this process), interleaved
// rounds; CPU µs per request of the gateway that served the row.
//
//   npm run bench -- oidc         (BENCH_DURATION_S, BENCH_ROUNDS shorten it)
import { TEST_CLIENT, TEST_RESOURCE, startOpenIdProvider } from '../test/helpers/openid-provider.js';
import { BENCH_PASSWORD, BENCH_USER, loginTokens, startGatehouse, type GatehouseProcess } from './lib/gatehouse.js';
import { generatorName } from './lib/load.js';
import { measure, settingsFromEnv } from './lib/measure.js';
import { startServer, type ServerProcess } from './lib/processes.js';
import { printTable, writeResults } from './lib/report.js';

export async function runOidcSection(): Promise<void> {
  const servers: Array<ServerProcess | GatehouseProcess> = [];
  // Tokens must outlive the whole run: an expired one would turn the rest into 401s.
  const op = await startOpenIdProvider({ [BENCH_USER]: { password: BENCH_PASSWORD } }, { accessTokenTtlS: 3600 });
  try {
    const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
    servers.push(upstream);
    const routes = [{ prefix: '/p', upstreams: [upstream.url] }];
    const extra = { log: { access: false } };
    const local = await startGatehouse({ routes, logLevel: 'warn', extra });
    servers.push(local);
    const fronting = await startGatehouse({
      routes,
      logLevel: 'warn',
      extra,
      identity: { provider: 'oidc', issuer: op.issuer, ...TEST_CLIENT, audience: TEST_RESOURCE, scopes: ['openid', 'offline_access', 'api'] },
    });
    servers.push(fronting);
    const own = await loginTokens(local.url);
    const provider = await loginTokens(fronting.url);
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    const settings = settingsFromEnv({ fixedRate: 0 });
    const introspectionsBefore = op.hits.get('/token/introspection') ?? 0;
    const rows = await measure(
      [
        { name: 'local mode, Gatehouse access token', url: `${local.url}/p/x`, headers: bearer(own.access_token), cpuMicros: () => local.cpuMicros() },
        {
          name: 'oidc mode, provider access token (JWKS)',
          url: `${fronting.url}/p/x`,
          headers: bearer(provider.access_token),
          cpuMicros: () => fronting.cpuMicros(),
        },
        {
          name: 'oidc mode, provider refresh token (introspected, cached)',
          url: `${fronting.url}/p/x`,
          headers: bearer(provider.refresh_token),
          cpuMicros: () => fronting.cpuMicros(),
        },
      ],
      settings,
    );
    const introspections = (op.hits.get('/token/introspection') ?? 0) - introspectionsBefore;
    printTable(
      `Fronting an OpenID Provider (${generatorName()}, c=${settings.connections}, ${settings.rounds} interleaved rounds of ${settings.durationS} s)`,
      rows,
      rows[0]!.name,
    );
    console.log(`introspections at the provider during the run: ${introspections} (one per token per introspection interval)`);
    writeResults('oidc', { rows, introspections });
  } finally {
    await Promise.allSettled(servers.map((server) => server.stop()));
    await op.close();
  }
}
