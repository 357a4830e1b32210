// Login and refresh through a real OpenID Provider, and every way the
// provider can fail put into the spec's errors: a wrong password is 401, a
// refused refresh 400, a provider down, slow or answering garbage 502/504.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OidcIdentitySchema, type OidcIdentityConfig } from '../../src/config/schema.js';
import { OidcProviderClient } from '../../src/oidc/provider-client.js';
import { gatehouseErrorOf } from '../helpers/diagnoses.js';
import { freePort } from '../helpers/ports.js';
import { startOpenIdProvider, TEST_CLIENT, TEST_RESOURCE, type TestOpenIdProvider } from '../helpers/openid-provider.js';

function settings(issuer: string, overrides: Partial<OidcIdentityConfig> = {}): OidcIdentityConfig {
  return OidcIdentitySchema.parse({
    provider: 'oidc',
    issuer,
    ...TEST_CLIENT,
    audience: TEST_RESOURCE,
    scopes: ['openid', 'offline_access', 'api'],
    ...overrides,
  });
}

describe('the OpenID Provider client', () => {
  let op: TestOpenIdProvider;
  let client: OidcProviderClient;

  beforeAll(async () => {
    op = await startOpenIdProvider({ alice: { password: 'alice-password', roles: ['admin'], groups: ['ops'] } });
    client = await OidcProviderClient.discover(settings(op.issuer));
  });
  afterAll(async () => op.close());

  it('logs in with the password grant and answers the spec token set', async () => {
    const tokens = await client.login('alice', 'alice-password');
    expect(tokens).toEqual({
      access_token: expect.any(String),
      expires_in: 300,
      refresh_token: expect.any(String),
      refresh_expires_in: expect.any(Number),
      token_type: 'bearer',
    });
    const claims = decodeJwt(tokens.access_token);
    expect(claims).toMatchObject({ iss: op.issuer, aud: TEST_RESOURCE, sub: 'alice', roles: ['admin'], groups: ['ops'] });
  });

  it('refreshes with the same refresh token several times (no rotation)', async () => {
    const { refresh_token } = await client.login('alice', 'alice-password');
    for (let i = 0; i < 3; i++) {
      const tokens = await client.refresh(refresh_token);
      expect(tokens.token_type).toBe('bearer');
      expect(decodeJwt(tokens.access_token).sub).toBe('alice');
    }
  });

  it('maps a wrong password to 401 invalid_user_credentials', async () => {
    const error = await gatehouseErrorOf(client.login('alice', 'wrong'));
    expect([error.code, error.status]).toEqual(['invalid_user_credentials', 401]);
  });

  it('maps a refused refresh token to 400 invalid_refresh_token', async () => {
    const error = await gatehouseErrorOf(client.refresh('not-a-refresh-token'));
    expect([error.code, error.status]).toEqual(['invalid_refresh_token', 400]);
  });

  it('maps a wrong client secret to 502, never 401', async () => {
    const misconfigured = await OidcProviderClient.discover(settings(op.issuer, { clientSecret: 'wrong-secret' }));
    const error = await gatehouseErrorOf(misconfigured.login('alice', 'alice-password'));
    expect(error.status).toBe(502);
  });
});

describe('a provider that fails', () => {
  let stub: Server;
  let base = '';
  let mode: 'garbage' | 'slow' | 'down' = 'garbage';

  beforeAll(async () => {
    stub = createServer((req, res) => {
      if (req.url === '/.well-known/openid-configuration') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ issuer: base, token_endpoint: `${base}/token`, jwks_uri: `${base}/jwks` }));
        return;
      }
      if (mode === 'garbage') {
        res.setHeader('content-type', 'text/html');
        res.end('<html>oops</html>');
        return;
      }
      if (mode === 'down') {
        res.statusCode = 503;
        res.setHeader('content-type', 'application/json');
        res.end('{"error":"temporarily_unavailable"}');
        return;
      }
      // slow: never answers; the client's bound ends the wait.
    });
    await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    stub.closeAllConnections();
    await new Promise((resolve) => stub.close(resolve));
  });

  it('answers 502 for garbage, not 401', async () => {
    mode = 'garbage';
    const client = await OidcProviderClient.discover(settings(base));
    expect((await gatehouseErrorOf(client.login('alice', 'x'))).code).toBe('identity_provider_invalid_response');
  });

  it('answers 502 for a provider that says it is unavailable', async () => {
    mode = 'down';
    const client = await OidcProviderClient.discover(settings(base));
    expect((await gatehouseErrorOf(client.login('alice', 'x'))).code).toBe('identity_provider_unreachable');
  });

  it('answers 504 for a provider that does not answer in time', async () => {
    mode = 'slow';
    const client = await OidcProviderClient.discover(settings(base, { timeoutMs: 50 }));
    const error = await gatehouseErrorOf(client.login('alice', 'x'));
    expect([error.code, error.status]).toEqual(['identity_provider_timeout', 504]);
  });

  it('answers 502 for a provider that is down (connection refused)', async () => {
    const port = await freePort();
    const error = await gatehouseErrorOf(OidcProviderClient.discover(settings(`http://127.0.0.1:${port}`)));
    expect([error.code, error.status]).toEqual(['identity_provider_unreachable', 502]);
  });
});

describe('introspection and revocation at the provider', () => {
  let op: TestOpenIdProvider;
  let client: OidcProviderClient;

  beforeAll(async () => {
    op = await startOpenIdProvider({ bob: { password: 'bob-password', roles: ['reader'] } });
    client = await OidcProviderClient.discover(settings(op.issuer));
  });
  afterAll(async () => op.close());

  it('introspects an opaque refresh token as active, and an unknown one as inactive', async () => {
    const { refresh_token } = await client.login('bob', 'bob-password');
    expect(await client.introspect(refresh_token)).toMatchObject({ active: true, sub: 'bob', client_id: TEST_CLIENT.clientId, exp: expect.any(Number) });
    expect(await client.introspect('no-such-token')).toBeNull();
  });

  it('revokes a refresh token: it neither introspects nor refreshes afterwards', async () => {
    expect(client.canRevoke).toBe(true);
    const { refresh_token } = await client.login('bob', 'bob-password');
    await client.refresh(refresh_token);
    await client.revoke(refresh_token);
    expect(await client.introspect(refresh_token)).toBeNull();
    expect((await gatehouseErrorOf(client.refresh(refresh_token))).code).toBe('invalid_refresh_token');
  });
});
