// The discovery document's token endpoint is a real RFC 6749 endpoint: a stock
// OpenID client library discovers Gatehouse, runs the password and refresh
// grants, and verifies the access token with the published JWKS.
import { createRemoteJWKSet, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { freePort } from '../helpers/ports.js';

let gw: TestGateway;
let issuer: string;
beforeAll(async () => {
  gw = await startTestGateway({ port: await freePort() });
  issuer = gw.config.tokens.issuer;
});
afterAll(async () => {
  await gw.close();
});

const discover = () => oidc.discovery(new URL(issuer), 'any-client', undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });

describe('with openid-client', () => {
  it('discovers the provider, runs the password and refresh grants, and verifies with the JWKS', async () => {
    const client = await discover();
    const metadata = client.serverMetadata();
    expect(metadata.issuer).toBe(issuer);
    expect(metadata.token_endpoint).toBe(`${issuer}/oauth/token`);
    expect(metadata.grant_types_supported).toEqual(expect.arrayContaining(['password', 'refresh_token']));

    const tokens = await oidc.genericGrantRequest(client, 'password', { username: 'alice', password: 'alice-password-1' });
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.expires_in).toBe(60);
    expect(typeof tokens.refresh_token).toBe('string');

    const refreshed = await oidc.refreshTokenGrant(client, tokens.refresh_token!);
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect(refreshed.refresh_token).toBe(tokens.refresh_token);

    const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri!));
    const { payload, protectedHeader } = await jwtVerify(refreshed.access_token, jwks, { issuer, audience: 'gatehouse' });
    expect(payload).toMatchObject({ typ: 'Bearer', preferred_username: 'alice' });
    expect(metadata).not.toHaveProperty('id_token_signing_alg_values_supported');
    const served = (await (await fetch(metadata.jwks_uri!)).json()) as { keys: Array<{ kid: string; alg: string }> };
    expect(served.keys.find((key) => key.kid === protectedHeader.kid)?.alg).toBe(protectedHeader.alg);
  });

  it("accepts an API key as the password grant's password", async () => {
    const client = await discover();
    const tokens = await oidc.genericGrantRequest(client, 'password', { username: 'alice', password: gw.apiKeys.alice![0]! });
    expect(typeof tokens.access_token).toBe('string');
  });

  it('surfaces invalid_grant for bad credentials as the library expects', async () => {
    const client = await discover();
    const failure = await oidc.genericGrantRequest(client, 'password', { username: 'alice', password: 'wrong' }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(oidc.ResponseBodyError);
    expect((failure as oidc.ResponseBodyError).error).toBe('invalid_grant');
    expect((failure as oidc.ResponseBodyError).status).toBe(400);
  });
});

describe('RFC 6749 errors', () => {
  const token = (body: string, contentType = 'application/x-www-form-urlencoded') =>
    fetch(`${gw.url}/oauth/token`, { method: 'POST', headers: { 'content-type': contentType }, body });

  it.each([
    ['no grant_type', 'username=alice&password=x', 'invalid_request'],
    ['an unknown grant_type', 'grant_type=client_credentials', 'unsupported_grant_type'],
    ['a missing password', 'grant_type=password&username=alice', 'invalid_request'],
    ['a repeated parameter', 'grant_type=password&username=alice&username=bob&password=x', 'invalid_request'],
    ['a wrong password', 'grant_type=password&username=alice&password=wrong', 'invalid_grant'],
    ['a bad refresh token', 'grant_type=refresh_token&refresh_token=abc', 'invalid_grant'],
  ])('answers %s with 400 and error=%s', async (_case, body, error) => {
    const response = await token(body);
    expect(response.status).toBe(400);
    // RFC 6749 5.1's header set, on errors as on tokens: every OAuth error of the gateway carries both.
    expect([response.headers.get('cache-control'), response.headers.get('pragma')]).toEqual(['no-store', 'no-cache']);
    expect(await response.json()).toMatchObject({ error, error_description: expect.any(String) });
  });

  it('refuses a JSON body with invalid_request', async () => {
    const response = await token('{"grant_type":"password"}', 'application/json');
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: 'invalid_request' });
  });
});
