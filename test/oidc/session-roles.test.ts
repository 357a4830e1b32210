// One provider session, one set of roles: a refresh token used as a bearer is
// introspected, and the provider's answer names no roles (as Keycloak's does
// not), yet it passes the same role rules as the session's access token; and
// once the provider takes the role away (seen at the next refresh, in the new
// access token), every token of the session is refused, on this instance and,
// through Redis, on another one that never saw the session before.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startOpenIdProvider, TEST_CLIENT, TEST_RESOURCE, type TestOpenIdProvider, type TestUser } from '../helpers/openid-provider.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

interface TokenSet {
  access_token: string;
  refresh_token: string;
}

const USERS: Record<string, TestUser> = {
  erin: { password: 'erin-password', roles: ['admin'] },
  frank: { password: 'frank-password', roles: ['admin'] },
};

let op: TestOpenIdProvider;
let upstream: Upstream;
let redis: { url: string; close(): Promise<void> };
const gateways: TestGateway[] = [];

async function fronting(store: Record<string, unknown> = {}): Promise<TestGateway> {
  const gateway = await startTestGateway({
    config: {
      store,
      identity: { provider: 'oidc', issuer: op.issuer, ...TEST_CLIENT, audience: TEST_RESOURCE, scopes: ['openid', 'offline_access', 'api'] },
      authorization: { roles: ['admin'] },
      routes: [{ name: 'admin', prefix: '/admin', upstreams: [upstream.url], authorize: { anyRole: ['admin'] } }],
    },
  });
  gateways.push(gateway);
  await vi.waitFor(async () => expect((await fetch(`${gateway.adminUrl}/readyz`)).status).toBe(200), { timeout: 10_000, interval: 50 });
  return gateway;
}

async function tokens(gateway: TestGateway, path: string, body: Record<string, string>): Promise<TokenSet> {
  const response = await postJson(`${gateway.url}${path}`, body);
  expect(response.status).toBe(200);
  return (await response.json()) as TokenSet;
}

async function status(gateway: TestGateway, token: string): Promise<number> {
  return (await fetch(`${gateway.url}/admin/panel`, { headers: { authorization: `Bearer ${token}` } })).status;
}

/** The provider's own answer about the refresh token: it names the session but no roles. */
async function introspected(token: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${op.issuer}/token/introspection`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${TEST_CLIENT.clientId}:${TEST_CLIENT.clientSecret}`).toString('base64')}`,
    },
    body: new URLSearchParams({ token }),
  });
  return (await response.json()) as Record<string, unknown>;
}

beforeAll(async () => {
  op = await startOpenIdProvider(USERS);
  upstream = await startUpstream();
  redis = await testRedisUrl();
});
afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.close()));
  await upstream?.close();
  await op?.close();
  await redis?.close();
});

describe('one provider session, one set of roles (oidc mode)', () => {
  it("a refresh token used as a bearer holds its session's roles, though introspection names none", async () => {
    const gateway = await fronting();
    const session = await tokens(gateway, '/api/v1/auth/login', { username: 'erin', password: 'erin-password' });
    const answer = await introspected(session.refresh_token);
    expect(answer).toMatchObject({ active: true, sub: 'erin', sid: expect.any(String) });
    expect(answer.roles).toBeUndefined();

    expect(await status(gateway, session.access_token)).toBe(200);
    expect(await status(gateway, session.refresh_token)).toBe(200);
  });

  it('a role the provider takes away is gone for every token of the session at the next refresh', async () => {
    const gateway = await fronting();
    const session = await tokens(gateway, '/api/v1/auth/login', { username: 'frank', password: 'frank-password' });
    expect(await status(gateway, session.access_token)).toBe(200);
    expect(await status(gateway, session.refresh_token)).toBe(200);

    USERS.frank!.roles = [];
    try {
      const renewed = await tokens(gateway, '/api/v1/auth/refresh', { refresh_token: session.refresh_token });
      expect(await status(gateway, renewed.access_token)).toBe(403);
      expect(await status(gateway, session.refresh_token)).toBe(403);
      // The older access token still says admin, but the provider has said otherwise since.
      expect(await status(gateway, session.access_token)).toBe(403);
    } finally {
      USERS.frank!.roles = ['admin'];
    }
  });

  it('two gateways sharing Redis agree: the one that never saw the session takes its roles from the store', async () => {
    const store = { url: redis.url, keyPrefix: uniquePrefix() };
    const [a, b] = [await fronting(store), await fronting(store)];
    const session = await tokens(a, '/api/v1/auth/login', { username: 'erin', password: 'erin-password' });
    expect(await status(b, session.refresh_token)).toBe(200);

    USERS.erin!.roles = [];
    try {
      await tokens(a, '/api/v1/auth/refresh', { refresh_token: session.refresh_token });
      const c = await fronting(store);
      expect(await status(c, session.refresh_token)).toBe(403);
      expect(await status(c, session.access_token)).toBe(403);
    } finally {
      USERS.erin!.roles = ['admin'];
    }
  });
});
