// What several identity providers cost on the proxied path of a token admitted
// before (the cached path): the same tokens with one provider configured and
// with three (local users and two OpenID Providers, `identity.provider:
// several`). Four gateway processes, two providers (oidc-provider, in this
// process), interleaved rounds; CPU µs per request of the gateway that served
// the row. The choice of provider is made at a token's first check only.
//
//   npm run bench -- providers    (BENCH_DURATION_S, BENCH_ROUNDS shorten it)
import { TEST_CLIENT, TEST_RESOURCE, startOpenIdProvider } from '../test/helpers/openid-provider.js';
import { BENCH_PASSWORD, BENCH_USER, loginTokens, startGatehouse, type GatehouseProcess } from './lib/gatehouse.js';
import { generatorName } from './lib/load.js';
import { measure, settingsFromEnv } from './lib/measure.js';
import { startServer, type ServerProcess } from './lib/processes.js';
import { printTable, writeResults } from './lib/report.js';

const oidc = (issuer: string) => ({ issuer, ...TEST_CLIENT, audience: TEST_RESOURCE, scopes: ['openid', 'offline_access', 'api'] });

export async function runProvidersSection(): Promise<void> {
  const servers: Array<ServerProcess | GatehouseProcess> = [];
  // Tokens must outlive the whole run: an expired one would turn the rest into 401s.
  const users = { [BENCH_USER]: { password: BENCH_PASSWORD } };
  const staff = await startOpenIdProvider(users, { accessTokenTtlS: 3600 });
  const partner = await startOpenIdProvider(users, { accessTokenTtlS: 3600, opaqueAccessTokens: true });
  try {
    const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
    servers.push(upstream);
    const routes = [{ prefix: '/p', upstreams: [upstream.url] }];
    const extra = { log: { access: false } };
    const start = (identity?: Record<string, unknown>) => startGatehouse({ routes, logLevel: 'warn', extra, ...(identity && { identity }) });
    const local = await start();
    servers.push(local);
    const fronting = await start({ provider: 'oidc', ...oidc(staff.issuer) });
    servers.push(fronting);
    const several = await start({
      provider: 'several',
      defaultProvider: 'local',
      providers: [
        { name: 'local', type: 'local', usersFile: './users.yaml' },
        { name: 'staff', type: 'oidc', ...oidc(staff.issuer) },
        { name: 'partner', type: 'oidc', ...oidc(partner.issuer) },
      ],
    });
    servers.push(several);
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    const row = (name: string, gateway: GatehouseProcess, token: string) => ({
      name,
      url: `${gateway.url}/p/x`,
      headers: bearer(token),
      cpuMicros: () => gateway.cpuMicros(),
    });
    const settings = settingsFromEnv({ fixedRate: 0 });
    const rows = await measure(
      [
        row('one provider (oidc), its access token', fronting, (await loginTokens(fronting.url)).access_token),
        row('three providers, the same provider access token', several, (await loginTokens(several.url, BENCH_PASSWORD, 'staff')).access_token),
        row('one provider (local), Gatehouse access token', local, (await loginTokens(local.url)).access_token),
        row('three providers, a local user Gatehouse token', several, (await loginTokens(several.url)).access_token),
        row('three providers, opaque token (introspected, cached)', several, (await loginTokens(several.url, BENCH_PASSWORD, 'partner')).access_token),
      ],
      settings,
    );
    const run = `${generatorName()}, c=${settings.connections}, ${settings.rounds} interleaved rounds of ${settings.durationS} s`;
    printTable(`Several identity providers, cached path (${run})`, rows, rows[0]!.name);
    writeResults('providers', { rows });
  } finally {
    await Promise.allSettled(servers.map((server) => server.stop()));
    await Promise.all([staff.close(), partner.close()]);
  }
}
