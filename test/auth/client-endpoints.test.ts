// Gatehouse as a standard OP in local mode: a stock relying party
// (openid-client) finds introspection (RFC 7662) and revocation (RFC 7009) in
// Gatehouse's own discovery, authenticates as a configured client, and sees a
// revoked session's tokens go inactive. Unauthenticated callers are refused.
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/users/passwords.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { freePort } from '../helpers/ports.js';

const CLIENT_ID = 'orders-service';
const CLIENT_SECRET = 'orders-service-secret';

let gw: TestGateway;
let issuer: string;
beforeAll(async () => {
  const secretHash = await hashPassword(CLIENT_SECRET, { logN: 10, r: 8, p: 1 });
  gw = await startTestGateway({ port: await freePort(), config: { tokens: { clients: [{ id: CLIENT_ID, secretHash }] } } });
  issuer = gw.config.tokens.issuer;
});
afterAll(async () => {
  await gw.close();
});

const relyingParty = (secret = CLIENT_SECRET) =>
  oidc.discovery(new URL(issuer), CLIENT_ID, undefined, oidc.ClientSecretBasic(secret), { execute: [oidc.allowInsecureRequests] });

describe('introspection and revocation for configured clients', () => {
  it('introspects access and refresh tokens, and both go inactive once either is revoked', async () => {
    const client = await relyingParty();
    expect(client.serverMetadata()).toMatchObject({ introspection_endpoint: `${issuer}/oauth/introspect`, revocation_endpoint: `${issuer}/oauth/revoke` });
    const tokens = await oidc.genericGrantRequest(client, 'password', { username: 'alice', password: 'alice-password-1' });
    expect(await oidc.tokenIntrospection(client, tokens.access_token)).toMatchObject({
      active: true,
      username: 'alice',
      token_type: 'access_token',
      iss: issuer,
    });
    expect(await oidc.tokenIntrospection(client, tokens.refresh_token!)).toMatchObject({ active: true, token_type: 'refresh_token' });
    await oidc.tokenRevocation(client, tokens.refresh_token!);
    expect(await oidc.tokenIntrospection(client, tokens.access_token)).toEqual({ active: false });
    expect(await oidc.tokenIntrospection(client, tokens.refresh_token!)).toEqual({ active: false });
  });

  it('answers an unknown token inactive, and its revocation 200 (RFC 7009 2.2)', async () => {
    const client = await relyingParty();
    expect(await oidc.tokenIntrospection(client, 'not-a-token')).toEqual({ active: false });
    await expect(oidc.tokenRevocation(client, 'not-a-token')).resolves.toBeUndefined();
  });

  it('refuses a wrong client secret, and a call without client credentials, with 401 invalid_client', async () => {
    const wrong = await relyingParty('wrong-secret');
    // RFC 6749 5.2: a 401 with a WWW-Authenticate challenge, which the stock client reports as such.
    await expect(oidc.tokenIntrospection(wrong, 'x')).rejects.toBeInstanceOf(oidc.WWWAuthenticateChallengeError);
    const basic = Buffer.from(`${CLIENT_ID}:wrong-secret`).toString('base64');
    const refused = await fetch(`${issuer}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
      body: 'token=x',
    });
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ error: 'invalid_client' });
    const anonymous = await fetch(`${issuer}/oauth/introspect`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'token=x',
    });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ error: 'invalid_client' });
  });
});
