// A fronted provider's JWT access tokens are checked locally against its key
// set: the claims become the identity, a forged or foreign token is refused,
// a key rotation at the provider is picked up without a restart, and a
// provider whose keys cannot be fetched is a 502, never a 401.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OidcIdentitySchema } from '../../src/config/schema.js';
import { ProviderTokenVerifier } from '../../src/oidc/access-token-verifier.js';
import { OidcProviderClient } from '../../src/oidc/provider-client.js';
import { gatehouseErrorOf } from '../helpers/diagnoses.js';
import { freePort } from '../helpers/ports.js';
import { startOpenIdProvider, TEST_CLIENT, TEST_RESOURCE, type TestOpenIdProvider } from '../helpers/openid-provider.js';

describe('verifying provider access tokens against its JWKS', () => {
  let op: TestOpenIdProvider;
  let client: OidcProviderClient;
  let verifier: ProviderTokenVerifier;
  const settings = () =>
    OidcIdentitySchema.parse({ provider: 'oidc', issuer: op.issuer, ...TEST_CLIENT, audience: TEST_RESOURCE, scopes: ['openid', 'offline_access', 'api'] });

  beforeAll(async () => {
    op = await startOpenIdProvider({ alice: { password: 'alice-password', roles: ['admin', 'reader'], groups: ['ops'] } });
    client = await OidcProviderClient.discover(settings());
    // No cooldown here: the rotation test must not wait on the clock.
    verifier = new ProviderTokenVerifier({
      issuer: op.issuer,
      jwksUri: String(client.metadata.jwks_uri),
      settings: settings(),
      clockToleranceS: 5,
      cooldownMs: 0,
    });
  });
  afterAll(async () => op.close());

  it('is ready once the first key set is held', async () => {
    expect(verifier.hasKeys).toBe(false);
    await verifier.ready();
    expect(verifier.hasKeys).toBe(true);
  });

  it('turns the configured claims into the identity: username, roles, groups', async () => {
    const { access_token } = await client.login('alice', 'alice-password');
    const verified = await verifier.verify(access_token);
    expect(verified.identity).toEqual({ sub: 'alice', username: 'alice', method: 'pwd', roles: ['admin', 'reader'], groups: ['ops'] });
    expect(verified.expiresAtMs).toBeGreaterThan(0);
  });

  it('refuses a token whose signature was tampered with as 401', async () => {
    const { access_token } = await client.login('alice', 'alice-password');
    const [head, body, signature] = access_token.split('.');
    const forged = `${head}.${body}.${signature!.startsWith('A') ? 'B' : 'A'}${signature!.slice(1)}`;
    expect((await gatehouseErrorOf(verifier.verify(forged))).status).toBe(401);
  });

  it('refuses a token for another audience', async () => {
    const other = new ProviderTokenVerifier({
      issuer: op.issuer,
      jwksUri: String(client.metadata.jwks_uri),
      settings: { ...settings(), audience: 'https://elsewhere.test' },
      clockToleranceS: 5,
    });
    const { access_token } = await client.login('alice', 'alice-password');
    expect((await gatehouseErrorOf(other.verify(access_token))).code).toBe('invalid_bearer_token');
  });

  it('picks up a key rotation at the provider without a restart', async () => {
    await verifier.verify((await client.login('alice', 'alice-password')).access_token);
    await op.rotateKeys();
    const { access_token } = await client.login('alice', 'alice-password');
    expect((await verifier.verify(access_token)).identity.sub).toBe('alice');
  });

  it('answers 502, not 401, when the key set cannot be fetched', async () => {
    const port = await freePort();
    const unreachable = new ProviderTokenVerifier({ issuer: op.issuer, jwksUri: `http://127.0.0.1:${port}/jwks`, settings: settings(), clockToleranceS: 5 });
    const { access_token } = await client.login('alice', 'alice-password');
    const error = await gatehouseErrorOf(unreachable.verify(access_token));
    expect([error.code, error.status]).toEqual(['identity_provider_unreachable', 502]);
    expect((await gatehouseErrorOf(unreachable.ready())).status).toBe(502);
  });

  it('keeps verifying with the last good keys when a refetch of the key set fails', async () => {
    // Every verification refetches (a key set is never fresh), so a provider outage is met at once.
    const staleAlways = new ProviderTokenVerifier({
      issuer: op.issuer,
      jwksUri: String(client.metadata.jwks_uri),
      settings: settings(),
      clockToleranceS: 5,
      cacheMaxAgeMs: 0,
    });
    const stale: unknown[] = [];
    staleAlways.onStaleKeys = (error) => stale.push(error);
    await staleAlways.ready();
    const { access_token } = await client.login('alice', 'alice-password');
    op.intercept = (req, res) => {
      if (!req.url?.includes('jwks')) return false;
      res.writeHead(503).end();
      return true;
    };
    try {
      expect((await staleAlways.verify(access_token)).identity.sub).toBe('alice');
      expect(stale).toHaveLength(1);
    } finally {
      op.intercept = undefined;
    }
  });

  it('names the provider session and the scopes a token carries', async () => {
    const verified = await verifier.verify((await client.login('alice', 'alice-password')).access_token);
    expect(verified.session).toEqual(expect.any(String));
    expect(verified.scopes).toEqual(['api']);
  });
});
