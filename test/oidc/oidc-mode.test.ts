// Gatehouse fronting a real OpenID Provider (oidc-provider, certified): the
// spec's login and refresh answered through the provider, its tokens admitted
// by the gateway's bearer rule on proxied routes (access tokens against its
// keys, refresh tokens through cached introspection), logout ending the login
// there and here, and every way the provider can fail put into the spec's
// errors, never a 401 the user would take for a wrong password.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import { postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startOpenIdProvider, TEST_CLIENT, TEST_RESOURCE, type TestOpenIdProvider, type TestUser } from '../helpers/openid-provider.js';
import { freePort } from '../helpers/ports.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

const PROVIDER_KEY = 'ghk_0123456789abcdef_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
const USERS: Record<string, TestUser> = {
  alice: { password: 'alice-password', apiKeys: [PROVIDER_KEY], roles: ['admin'] },
  bob: { password: 'bob-password' },
};

interface TokenSet {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  refresh_expires_in: number;
  token_type: string;
}

function oidcIdentity(issuer: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { provider: 'oidc', issuer, ...TEST_CLIENT, audience: TEST_RESOURCE, scopes: ['openid', 'offline_access', 'api'], ...overrides };
}

async function startFronting(issuer: string, upstream: Upstream, config: Record<string, Record<string, unknown> | unknown[]> = {}): Promise<TestGateway> {
  return startTestGateway({
    config: {
      identity: oidcIdentity(issuer),
      authorization: { roles: ['admin'] },
      routes: [
        { name: 'things', prefix: '/things', upstreams: [upstream.url] },
        { name: 'admin', prefix: '/admin', upstreams: [upstream.url], authorize: { anyRole: ['admin'] } },
      ],
      ...config,
    },
  });
}

async function ready(gateway: TestGateway): Promise<void> {
  await vi.waitFor(async () => expect((await fetch(`${gateway.adminUrl}/readyz`)).status).toBe(200), { timeout: 10_000, interval: 50 });
}

async function login(gateway: TestGateway, username: string, password: string): Promise<TokenSet> {
  const response = await postJson(`${gateway.url}/api/v1/auth/login`, { username, password });
  expect(response.status).toBe(200);
  return (await response.json()) as TokenSet;
}

function bearer(token: string): RequestInit {
  return { headers: { authorization: `Bearer ${token}` } };
}

/** A provider answering a path with nothing at all, or with garbage, while set. */
function hang(op: TestOpenIdProvider, path: string): void {
  op.intercept = (req) => req.url?.startsWith(path) === true;
}
function garbage(op: TestOpenIdProvider, path: string): void {
  op.intercept = (req, res) => {
    if (!req.url?.startsWith(path)) return false;
    res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>');
    return true;
  };
}

describe('fronting an OpenID Provider (identity.provider: oidc)', () => {
  let op: TestOpenIdProvider;
  let upstream: Upstream;
  let gateway: TestGateway;

  beforeAll(async () => {
    op = await startOpenIdProvider(USERS);
    upstream = await startUpstream();
    gateway = await startFronting(op.issuer, upstream, { identity: oidcIdentity(op.issuer, { timeoutMs: 1_000, keySetRefetchCooldownS: 0 }) });
    await ready(gateway);
  });
  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
    await op?.close();
  });
  afterEach(() => {
    op.intercept = undefined;
  });

  it('logs in with a password and answers the spec token set, filling what the provider leaves out', async () => {
    const tokens = await login(gateway, 'alice', 'alice-password');
    expect(tokens).toEqual({
      access_token: expect.any(String),
      refresh_token: expect.any(String),
      expires_in: 300,
      refresh_expires_in: 86_400,
      token_type: 'bearer',
    });
    const proxied = await fetch(`${gateway.url}/things/1`, bearer(tokens.access_token));
    expect(proxied.status).toBe(200);
    const seen = upstream.seen.at(-1)!;
    expect(seen.headers['x-gatehouse-subject']).toBe('alice');
    expect(seen.headers['x-gatehouse-username']).toBe('alice');
    expect(seen.headers['x-gatehouse-token-type']).toBe('access');
    expect(seen.headers.authorization).toBeUndefined();
  });

  it('logs in with an API key given as the password: it goes to the provider as the password', async () => {
    const tokens = await login(gateway, 'alice', PROVIDER_KEY);
    expect((await fetch(`${gateway.url}/things/key`, bearer(tokens.access_token))).status).toBe(200);
    expect(gateway.logs.entries().some((line) => line.event === 'audit' && line.outcome === 'success' && line.method === 'api_key')).toBe(true);
  });

  it('answers a wrong password with the spec 401, and never logs the password', async () => {
    const response = await postJson(`${gateway.url}/api/v1/auth/login`, { username: 'alice', password: 'not-her-password' });
    const body = await response.text();
    expectDiagnoses(response.status, body, 401, /invalid user credentials$/);
    expect(JSON.parse(body).$diagnoses[0].$message).toBe('Please log in to carry out this action.');
    expect(JSON.stringify(gateway.logs.entries())).not.toContain('not-her-password');
  });

  it('refreshes with the same refresh token several times: it is not rotated', async () => {
    const tokens = await login(gateway, 'bob', 'bob-password');
    for (let i = 0; i < 3; i++) {
      const response = await postJson(`${gateway.url}/api/v1/auth/refresh`, { refresh_token: tokens.refresh_token });
      expect(response.status).toBe(200);
      const renewed = (await response.json()) as TokenSet;
      expect(renewed.token_type).toBe('bearer');
      expect(renewed.refresh_token).toBe(tokens.refresh_token);
      expect((await fetch(`${gateway.url}/things/r${i}`, bearer(renewed.access_token))).status).toBe(200);
    }
  });

  it('answers a refresh the provider refuses with the spec 400', async () => {
    const response = await postJson(`${gateway.url}/api/v1/auth/refresh`, { refresh_token: 'not-a-refresh-token-the-provider-issued' });
    expectDiagnoses(response.status, await response.text(), 400, /invalid refresh token$/);
  });

  it('admits a refresh token as a bearer on a proxied route (spec 5.9), introspecting it once', async () => {
    const tokens = await login(gateway, 'bob', 'bob-password');
    const before = op.hits.get('/token/introspection') ?? 0;
    for (let i = 0; i < 3; i++) expect((await fetch(`${gateway.url}/things/rt${i}`, bearer(tokens.refresh_token))).status).toBe(200);
    expect(upstream.seen.at(-1)!.headers['x-gatehouse-token-type']).toBe('refresh');
    expect((op.hits.get('/token/introspection') ?? 0) - before).toBe(1);
  });

  it('refuses a token that is no provider token, as 401', async () => {
    const response = await fetch(`${gateway.url}/things/x`, bearer('opaque-garbage-token'));
    expectDiagnoses(response.status, await response.text(), 401, /./);
  });

  it('applies route rules to the roles the provider put in the token', async () => {
    const alice = await login(gateway, 'alice', 'alice-password');
    const bob = await login(gateway, 'bob', 'bob-password');
    expect((await fetch(`${gateway.url}/admin/panel`, bearer(alice.access_token))).status).toBe(200);
    expect((await fetch(`${gateway.url}/admin/panel`, bearer(bob.access_token))).status).toBe(403);
  });

  it('picks up a key rotation at the provider without a restart', async () => {
    await op.rotateKeys();
    const tokens = await login(gateway, 'alice', 'alice-password');
    expect((await fetch(`${gateway.url}/things/rotated`, bearer(tokens.access_token))).status).toBe(200);
  });

  it('ends the login on logout: at the provider and here, for the refresh token and every access token of the session', async () => {
    const tokens = await login(gateway, 'bob', 'bob-password');
    const access = bearer(tokens.access_token);
    expect((await fetch(`${gateway.url}/things/before`, access)).status).toBe(200);
    const revocations = op.hits.get('/token/revocation') ?? 0;
    const logout = await fetch(`${gateway.url}/api/v1/auth/logout`, { method: 'POST', ...bearer(tokens.refresh_token) });
    expect(logout.status).toBe(204);
    expect(op.hits.get('/token/revocation')).toBe(revocations + 1);
    // The access token was a cache hit before; the session's end reached the cache.
    expect((await fetch(`${gateway.url}/things/after`, access)).status).toBe(401);
    expect((await fetch(`${gateway.url}/things/after`, bearer(tokens.refresh_token))).status).toBe(401);
    const refresh = await postJson(`${gateway.url}/api/v1/auth/refresh`, { refresh_token: tokens.refresh_token });
    expectDiagnoses(refresh.status, await refresh.text(), 400, /invalid refresh token$/);
  });

  it('does not pose as an OpenID Provider itself: no discovery, no token endpoint of its own', async () => {
    expect((await fetch(`${gateway.url}/.well-known/openid-configuration`)).status).toBe(404);
    expect((await fetch(`${gateway.url}/oauth/token`, { method: 'POST' })).status).toBe(404);
  });

  describe('the provider failing is never a 401', () => {
    it('answers 504 when the token endpoint does not answer in time, at login and at refresh', async () => {
      const tokens = await login(gateway, 'bob', 'bob-password');
      hang(op, '/token');
      const slowLogin = await postJson(`${gateway.url}/api/v1/auth/login`, { username: 'bob', password: 'bob-password' });
      expectDiagnoses(slowLogin.status, await slowLogin.text(), 504, /identity provider timed out$/);
      const slowRefresh = await postJson(`${gateway.url}/api/v1/auth/refresh`, { refresh_token: tokens.refresh_token });
      expectDiagnoses(slowRefresh.status, await slowRefresh.text(), 504, /identity provider timed out$/);
    });

    it('answers 502 when the provider answers garbage', async () => {
      garbage(op, '/token');
      const response = await postJson(`${gateway.url}/api/v1/auth/login`, { username: 'bob', password: 'bob-password' });
      expectDiagnoses(response.status, await response.text(), 502, /identity provider answered garbage$/);
    });

    it('answers 502 when introspection of a refresh token used as a bearer fails', async () => {
      const tokens = await login(gateway, 'bob', 'bob-password');
      garbage(op, '/token/introspection');
      const response = await fetch(`${gateway.url}/things/introspect`, bearer(tokens.refresh_token));
      expect(response.status).toBe(502);
    });

    it('keeps admitting tokens already checked while the provider is away', async () => {
      const tokens = await login(gateway, 'alice', 'alice-password');
      expect((await fetch(`${gateway.url}/things/a`, bearer(tokens.access_token))).status).toBe(200);
      hang(op, '/');
      expect((await fetch(`${gateway.url}/things/b`, bearer(tokens.access_token))).status).toBe(200);
    });
  });

  it('throttles password guessing in front of the provider', async () => {
    const throttled = await startFronting(op.issuer, upstream, { identity: oidcIdentity(op.issuer), limits: { login: { freeFailures: 1, firstWaitS: 60 } } });
    try {
      await ready(throttled);
      const guess = () => postJson(`${throttled.url}/api/v1/auth/login`, { username: 'alice', password: 'guess' });
      expect((await guess()).status).toBe(401);
      expect((await guess()).status).toBe(401);
      const tokenCalls = op.hits.get('/token') ?? 0;
      expect((await guess()).status).toBe(429);
      // Refused in front of the provider: it was not asked.
      expect(op.hits.get('/token')).toBe(tokenCalls);
    } finally {
      await throttled.close();
    }
  });
});

describe('a provider that is down when the gateway starts', () => {
  it('starts not ready, answers logins 502 (not 401), and becomes ready when the provider comes', async () => {
    const port = await freePort();
    const upstream = await startUpstream();
    const gateway = await startFronting(`http://127.0.0.1:${port}`, upstream);
    let op: TestOpenIdProvider | undefined;
    try {
      const readiness = await fetch(`${gateway.adminUrl}/readyz`);
      // The refusal in the errors' format, beside the readiness checks that say which part is missing.
      const { status, checks, ...refusal } = (await readiness.json()) as { status: string; checks: Record<string, unknown> };
      expect({ status, signingKeys: checks.signingKeys }).toEqual({ status: 'unready', signingKeys: { status: 'unready', source: 'provider', held: false } });
      expectDiagnoses(readiness.status, JSON.stringify(refusal), 503, /the identity provider keys are not held yet$/);
      const response = await postJson(`${gateway.url}/api/v1/auth/login`, { username: 'alice', password: 'alice-password' });
      expectDiagnoses(response.status, await response.text(), 502, /identity provider unreachable$/);
      op = await startOpenIdProvider(USERS, { port });
      await ready(gateway);
      await login(gateway, 'alice', 'alice-password');
    } finally {
      await gateway.close();
      await upstream.close();
      await op?.close();
    }
  });
});

describe('two gateways fronting one provider, sharing Redis', () => {
  it('introspect a refresh token once between them, and a logout on one ends the login on the other at once', async () => {
    const op = await startOpenIdProvider(USERS);
    const upstream = await startUpstream();
    const redis = await testRedisUrl();
    const store = { url: redis.url, keyPrefix: uniquePrefix() };
    const [a, b] = await Promise.all([startFronting(op.issuer, upstream, { store }), startFronting(op.issuer, upstream, { store })]);
    try {
      await Promise.all([ready(a), ready(b)]);
      const tokens = await login(a, 'bob', 'bob-password');
      expect((await fetch(`${a.url}/things/1`, bearer(tokens.refresh_token))).status).toBe(200);
      expect((await fetch(`${b.url}/things/2`, bearer(tokens.refresh_token))).status).toBe(200);
      expect(op.hits.get('/token/introspection')).toBe(1);
      expect((await fetch(`${b.url}/things/3`, bearer(tokens.access_token))).status).toBe(200);

      expect((await fetch(`${a.url}/api/v1/auth/logout`, { method: 'POST', ...bearer(tokens.access_token) })).status).toBe(204);
      // b held both tokens as checked; the end of the session reached it over the store's feed.
      await vi.waitFor(async () => expect((await fetch(`${b.url}/things/4`, bearer(tokens.access_token))).status).toBe(401));
      expect((await fetch(`${b.url}/things/5`, bearer(tokens.refresh_token))).status).toBe(401);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await upstream.close();
      await op.close();
      await redis.close();
    }
  });
});

describe('authenticating at the provider with private_key_jwt', () => {
  it('logs in, refreshes and introspects with a signed assertion instead of a secret', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const publicJwk = { ...publicKey.export({ format: 'jwk' }), kid: 'gatehouse-key-1', alg: 'RS256', use: 'sig' };
    const op = await startOpenIdProvider(USERS, { privateKeyJwtClient: { clientId: 'gatehouse-pkjwt', publicJwk } });
    const upstream = await startUpstream();
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-pkjwt-'));
    const keyFile = join(dir, 'client-key.pem');
    await writeFile(keyFile, privateKey.export({ format: 'pem', type: 'pkcs8' }));
    const identity = {
      provider: 'oidc',
      issuer: op.issuer,
      clientId: 'gatehouse-pkjwt',
      clientAuth: 'private_key_jwt',
      privateKeyFile: keyFile,
      privateKeyId: 'gatehouse-key-1',
      audience: TEST_RESOURCE,
      scopes: ['openid', 'offline_access', 'api'],
    };
    const gateway = await startFronting(op.issuer, upstream, { identity });
    try {
      await ready(gateway);
      const tokens = await login(gateway, 'bob', 'bob-password');
      expect((await postJson(`${gateway.url}/api/v1/auth/refresh`, { refresh_token: tokens.refresh_token })).status).toBe(200);
      expect((await fetch(`${gateway.url}/things/pk`, bearer(tokens.refresh_token))).status).toBe(200);
      expect(op.hits.get('/token/introspection')).toBe(1);
    } finally {
      await gateway.close();
      await upstream.close();
      await op.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
