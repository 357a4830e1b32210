// Fronting an OpenID Provider (oidc mode): an access token the provider bound
// to a client's key (`cnf.jkt`, as Keycloak issues them) is enforced as the
// gateway's own bound tokens are: only with `Authorization: DPoP` and a proof
// of that key. The provider here is oidc-provider; the bound token is signed
// with its own key, with the claims a DPoP-binding provider writes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import { clientKey, proof, type ClientKey } from '../helpers/dpop.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startOpenIdProvider, TEST_CLIENT, TEST_RESOURCE, type TestOpenIdProvider } from '../helpers/openid-provider.js';
import { startUpstream, type EchoBody, type Upstream } from '../helpers/upstream.js';

let op: TestOpenIdProvider;
let upstream: Upstream;
let gw: TestGateway;
let key: ClientKey;
let bound: string;

beforeAll(async () => {
  [op, upstream] = await Promise.all([startOpenIdProvider({ alice: { password: 'alice-password' } }), startUpstream()]);
  gw = await startTestGateway({
    config: {
      identity: { provider: 'oidc', issuer: op.issuer, ...TEST_CLIENT, audience: TEST_RESOURCE, scopes: ['openid', 'offline_access', 'api'] },
      routes: [{ name: 'api', prefix: '/api', upstreams: [upstream.url] }],
    },
  });
  key = await clientKey('ES256');
  const now = Math.floor(Date.now() / 1000);
  bound = await op.sign({ iss: op.issuer, sub: 'alice', aud: TEST_RESOURCE, iat: now, exp: now + 300, sid: 'provider-session-1', cnf: { jkt: key.jkt } });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
  await op?.close();
});

describe("a provider's DPoP-bound access token", () => {
  const url = () => `${gw.url}/api/orders`;

  it('passes with the DPoP scheme and a proof of its key; the backend learns the key', async () => {
    const response = await fetch(url(), { headers: { authorization: `DPoP ${bound}`, dpop: await proof(key, 'GET', url(), { accessToken: bound }) } });
    expect(response.status).toBe(200);
    expect(((await response.json()) as EchoBody).headers['x-gatehouse-dpop-jkt']).toBe(key.jkt);
  });

  it('attack: the stolen provider token presented as Bearer is 401 with the DPoP challenge', async () => {
    const response = await fetch(url(), { headers: { authorization: `Bearer ${bound}` } });
    expectDiagnoses(response.status, await response.text(), 401, /a DPoP-bound token needs the DPoP scheme and a proof$/);
    expect(response.headers.get('www-authenticate')).toMatch(/^DPoP error="invalid_token"/);
  });

  it('attack: a proof of another key is 401', async () => {
    const thief = await clientKey('ES256');
    const response = await fetch(url(), { headers: { authorization: `DPoP ${bound}`, dpop: await proof(thief, 'GET', url(), { accessToken: bound }) } });
    expectDiagnoses(response.status, await response.text(), 401, /another key than the token is bound to$/);
  });

  it('a cnf the gateway cannot check (no jkt) is refused rather than taken for a plain token', async () => {
    const now = Math.floor(Date.now() / 1000);
    const mtlsBound = await op.sign({ iss: op.issuer, sub: 'alice', aud: TEST_RESOURCE, iat: now, exp: now + 300, cnf: { 'x5t#S256': 'abc' } });
    const response = await fetch(url(), { headers: { authorization: `Bearer ${mtlsBound}` } });
    expectDiagnoses(response.status, await response.text(), 401, /bound in a way the gateway cannot check$/);
  });
});
