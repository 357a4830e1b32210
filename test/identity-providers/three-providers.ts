// The setting of the identity-providers tests: two real OpenID Providers
// (oidc-provider) with keys of their own — `staff` signs JWT access tokens,
// `partner` hands out opaque ones that only its introspection can check —
// beside Gatehouse's own users (`local`), on three gateway instances that
// share a real redis-server. Both providers send their back-channel logouts
// to the first instance.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashPassword } from '../../src/users/passwords.js';
import { DEFAULT_TEST_USERS, startTestGateway, TEST_SCRYPT_PARAMS, writeTestUsers, type TestGateway } from '../helpers/gateway.js';
import { startOpenIdProvider, TEST_CLIENT, TEST_RESOURCE, type TestOpenIdProvider } from '../helpers/openid-provider.js';
import { freePort } from '../helpers/ports.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

export interface ThreeProviders {
  staff: TestOpenIdProvider;
  partner: TestOpenIdProvider;
  gateways: [TestGateway, TestGateway, TestGateway];
  upstream: Upstream;
  close(): Promise<void>;
}

export const STAFF_USER = { username: 'sam', password: 'sam-password-1' } as const;
export const PARTNER_USER = { username: 'pia', password: 'pia-password-1' } as const;
export const LOCAL_USER = { username: 'alice', password: 'alice-password-1' } as const;
/** A client of Gatehouse's own introspection endpoint. */
export const RESOURCE_SERVER = { id: 'orders-service', secret: 'orders-service-secret-1' } as const;

const oidcEntry = (name: string, issuer: string, extra: Record<string, unknown> = {}) => ({
  name,
  type: 'oidc',
  issuer,
  ...TEST_CLIENT,
  audience: TEST_RESOURCE,
  scopes: ['openid', 'offline_access', 'api'],
  ...extra,
});

export async function startThreeProviders(): Promise<ThreeProviders> {
  const redis = await testRedisUrl();
  const upstream = await startUpstream();
  const port = await freePort();
  const backchannelLogoutUri = `http://127.0.0.1:${port}/oauth/backchannel-logout`;
  const staff = await startOpenIdProvider({ [STAFF_USER.username]: { password: STAFF_USER.password, roles: ['staff'] } }, { backchannelLogoutUri });
  const partner = await startOpenIdProvider(
    { [PARTNER_USER.username]: { password: PARTNER_USER.password, roles: ['partner'] } },
    { backchannelLogoutUri, opaqueAccessTokens: true },
  );
  // One users file and one keys file for the three instances, as a deployment shares them.
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-providers-'));
  const usersFile = join(dir, 'users.yaml');
  await writeTestUsers(usersFile, DEFAULT_TEST_USERS);
  const config = {
    identity: {
      provider: 'several',
      defaultProvider: 'local',
      providers: [
        { name: 'local', type: 'local', usersFile },
        // No cooldown: a key the gateway does not hold would be fetched at once, so a fetch the defence saves is seen.
        oidcEntry('staff', staff.issuer, { keySetRefetchCooldownS: 0 }),
        oidcEntry('partner', partner.issuer, { keySetRefetchCooldownS: 0 }),
      ],
    },
    store: { url: redis.url, keyPrefix: uniquePrefix() },
    tokens: {
      issuer: 'https://gatehouse.providers.test',
      keysFile: join(dir, 'keys.json'),
      clients: [{ id: RESOURCE_SERVER.id, secretHash: await hashPassword(RESOURCE_SERVER.secret, TEST_SCRYPT_PARAMS) }],
    },
    authorization: { roles: ['staff', 'partner'] },
    routes: [
      { name: 'everyone', prefix: '/everyone', upstreams: [upstream.url] },
      { name: 'staff-only', prefix: '/staff-only', upstreams: [upstream.url], providers: ['staff'] },
      { name: 'partners', prefix: '/partners', upstreams: [upstream.url], providers: ['partner', 'local'] },
      { name: 'staff-role', prefix: '/staff-role', upstreams: [upstream.url], authorize: { anyRole: ['staff'] } },
      { name: 'asserted', prefix: '/asserted', upstreams: [upstream.url], identityAssertion: {} },
    ],
  };
  const gateways: [TestGateway, TestGateway, TestGateway] = [
    await startTestGateway({ port, config }),
    await startTestGateway({ config }),
    await startTestGateway({ config }),
  ];
  return {
    staff,
    partner,
    gateways,
    upstream,
    close: async () => {
      await Promise.all(gateways.map((gateway) => gateway.close()));
      await Promise.all([staff.close(), partner.close(), upstream.close()]);
      await redis.close();
    },
  };
}

/** The total of every request a provider received. */
export function hitsOf(provider: TestOpenIdProvider): number {
  return [...provider.hits.values()].reduce((sum, count) => sum + count, 0);
}

export async function loginAt(gateway: TestGateway, user: { username: string; password: string }, provider?: string): Promise<Response> {
  return fetch(`${gateway.url}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...user, ...(provider !== undefined && { provider }) }),
  });
}

export async function tokensAt(gateway: TestGateway, user: { username: string; password: string }, provider?: string) {
  const response = await loginAt(gateway, user, provider);
  if (response.status !== 200) throw new Error(`login at ${provider ?? 'the default provider'} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as { access_token: string; refresh_token: string };
}

export async function statusWith(gateway: TestGateway, path: string, token: string): Promise<number> {
  const response = await fetch(`${gateway.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  await response.arrayBuffer();
  return response.status;
}
