// A DPoP client nobody here wrote: openid-client (on oauth4webapi) discovers
// Gatehouse, logs in with the password grant and a DPoP key of its own, calls
// a route through the gateway and refreshes, each request with the proof it
// makes itself.
import { calculateJwkThumbprint, exportJWK } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jwtPayload, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { freePort } from '../helpers/ports.js';
import { startUpstream, type EchoBody, type Upstream } from '../helpers/upstream.js';

let upstream: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startUpstream();
  gw = await startTestGateway({ port: await freePort(), config: { routes: [{ name: 'api', prefix: '/api', upstreams: [upstream.url] }] } });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

describe('openid-client with DPoP against Gatehouse', () => {
  it('logs in, calls a route and refreshes with bound tokens; the bound access token alone is refused', async () => {
    const config = await oidc.discovery(new URL(gw.url), 'a-cli', undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
    expect(config.serverMetadata().dpop_signing_alg_values_supported).toContain('ES256');
    const keyPair = await oidc.randomDPoPKeyPair('ES256');
    const dpop = oidc.getDPoPHandle(config, keyPair);

    const tokens = await oidc.genericGrantRequest(config, 'password', { username: 'alice', password: 'alice-password-1' }, { DPoP: dpop });
    expect(tokens.token_type).toBe('dpop');
    const jkt = await calculateJwkThumbprint(await exportJWK(keyPair.publicKey), 'sha256');
    const claims = jwtPayload(tokens.access_token) as { cnf?: { jkt: string } };
    expect(claims.cnf).toEqual({ jkt });
    expect(jwtPayload(tokens.refresh_token!)).toEqual(expect.objectContaining({ cnf: claims.cnf }));

    const response = await oidc.fetchProtectedResource(config, tokens.access_token, new URL(`${gw.url}/api/orders?page=1`), 'GET', undefined, undefined, {
      DPoP: dpop,
    });
    expect(response.status).toBe(200);
    const seen = (await response.json()) as EchoBody;
    expect(seen.headers['x-gatehouse-dpop-jkt']).toBe(claims.cnf?.jkt);
    expect(seen.headers).not.toHaveProperty('dpop');

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: dpop });
    expect(refreshed.token_type).toBe('dpop');
    expect((jwtPayload(refreshed.access_token) as { cnf?: unknown }).cnf).toEqual(claims.cnf);

    // The same token without the client's key: what a thief holds.
    const stolen = await fetch(`${gw.url}/api/orders`, { headers: { authorization: `Bearer ${refreshed.access_token}` } });
    expect(stolen.status).toBe(401);
  });
});
