// The signed identity for backends, end to end: a real gateway, a real
// backend that verifies what it receives with the worked example's own code
// (examples/verify-assertion/, jose's remote key set against the gateway's
// JWKS), so the example cannot rot; a forged assertion from a client never
// reaches a backend; a session's assertion is signed once and used again.
import { resolve } from 'node:path';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JWKS_PATH } from '../../src/http/gateway-paths.js';
import { clientKey, proof } from '../helpers/dpop.js';
import { login, postJson, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { echo, startUpstream, type EchoBody, type Upstream } from '../helpers/upstream.js';

type Verify = (headers: Record<string, string | string[] | undefined>) => Promise<Record<string, unknown>>;
interface Example {
  assertionVerifier(options: { issuer: string; audience: string; jwksUrl?: string; header?: string }): Verify;
}

/** Not the default name: only the gateway's removal of this header keeps a client's copy from the backend. */
const HEADER = 'x-backend-identity';
const ISSUER = 'https://gateway.example.test';

let upstream: Upstream;
let gw: TestGateway;
let bearer: { authorization: string };
let example: Example;

beforeAll(async () => {
  // A path held in a variable: the example is plain JavaScript, loaded as a backend would load it.
  const examplePath = resolve(import.meta.dirname, '../../examples/verify-assertion/verify-assertion.mjs');
  example = (await import(examplePath)) as Example;
  upstream = await startUpstream(echo);
  gw = await startTestGateway({
    users: [{ name: 'alice', password: 'alice-password-1', roles: ['clerk'] }],
    config: {
      // ECDSA signatures differ each time they are made (EdDSA's do not): a token seen twice was signed once.
      tokens: { issuer: ISSUER, algorithm: 'ES256' },
      proxy: { identityHeaders: { assertion: HEADER } },
      authorization: { roles: ['clerk'] },
      routes: [
        { name: 'orders', prefix: '/orders', upstreams: [upstream.url], identityAssertion: {} },
        { name: 'billing', prefix: '/billing', upstreams: [upstream.url], identityAssertion: { audience: 'https://billing.internal', lifetimeS: 30 } },
        { name: 'plain', prefix: '/plain', upstreams: [upstream.url] },
      ],
    },
  });
  const tokens = await login(gw.url, 'alice', 'alice-password-1');
  bearer = { authorization: `Bearer ${tokens.access_token}` };
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

async function through(path: string, headers: Record<string, string> = {}): Promise<EchoBody> {
  const response = await fetch(`${gw.url}${path}`, { headers: { ...bearer, ...headers } });
  expect(response.status).toBe(200);
  return (await response.json()) as EchoBody;
}

function verifierFor(audience: string): Verify {
  return example.assertionVerifier({ issuer: ISSUER, audience, jwksUrl: `${gw.url}${JWKS_PATH}`, header: HEADER });
}

describe('a route with identityAssertion', () => {
  it("sends an assertion the example backend verifies against the gateway's JWKS", async () => {
    const seen = await through('/orders/42');
    const claims = await verifierFor('orders')(seen.headers);
    expect(claims).toMatchObject({ iss: ISSUER, aud: 'orders', preferred_username: 'alice', roles: ['clerk'], amr: ['pwd'] });
    expect(claims.sub).toBe(seen.headers['x-gatehouse-subject']);
    expect(claims.sid).toBe(seen.headers['x-gatehouse-session']);
    expect((claims.exp as number) - (claims.iat as number)).toBe(60);
    expect(claims).not.toHaveProperty('cnf');
    expect(decodeProtectedHeader(seen.headers[HEADER] as string)).toMatchObject({ typ: 'gatehouse-assertion+jwt' });
  });

  it('names the configured audience and lifetime, and the example refuses it for another backend', async () => {
    const seen = await through('/billing/7');
    const claims = await verifierFor('https://billing.internal')(seen.headers);
    expect((claims.exp as number) - (claims.iat as number)).toBe(30);
    await expect(verifierFor('orders')(seen.headers)).rejects.toMatchObject({ code: 'ERR_JWT_CLAIM_VALIDATION_FAILED' });
  });

  it('a route without it sends none', async () => {
    expect((await through('/plain/1')).headers[HEADER]).toBeUndefined();
  });
});

describe('a DPoP-bound request', () => {
  it("carries the proof key's thumbprint in cnf.jkt", async () => {
    const key = await clientKey('ES256');
    const loginUrl = `${gw.url}/api/v1/auth/login`;
    const response = await postJson(loginUrl, { username: 'alice', password: 'alice-password-1' }, { dpop: await proof(key, 'POST', loginUrl) });
    const bound = (await response.json()) as TokenSetBody;
    const url = `${gw.url}/orders/bound`;
    const answer = await fetch(url, {
      headers: { authorization: `DPoP ${bound.access_token}`, dpop: await proof(key, 'GET', url, { accessToken: bound.access_token }) },
    });
    expect(answer.status).toBe(200);
    const seen = (await answer.json()) as EchoBody;
    expect(await verifierFor('orders')(seen.headers)).toMatchObject({ cnf: { jkt: key.jkt }, preferred_username: 'alice' });
  });
});

describe('attacks', () => {
  it('a forged client-sent assertion never reaches the backend, however it is spelt', async () => {
    const forged = 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9.';
    const spellings = { [HEADER]: forged, 'X-Backend-Identity': forged, x_backend_identity: forged, 'x.backend.identity': forged };
    for (const [name, value] of Object.entries(spellings)) {
      const plain = await through('/plain/1', { [name]: value });
      expect(JSON.stringify(plain.headers)).not.toContain(forged);
      const asserted = await through('/orders/1', { [name]: value });
      expect(JSON.stringify(asserted.headers)).not.toContain(forged);
      expect(decodeJwt(asserted.headers[HEADER] as string).preferred_username).toBe('alice');
    }
  });

  it('an assertion a backend received is refused as a bearer token at the gateway', async () => {
    const seen = await through('/orders/1');
    const replayed = await fetch(`${gw.url}/plain/1`, { headers: { authorization: `Bearer ${seen.headers[HEADER] as string}` } });
    expect(replayed.status).toBe(401);
  });
});

describe('the cost of signing', () => {
  it('is paid once per session and route: two requests within its life carry the same assertion', async () => {
    const first = (await through('/orders/a')).headers[HEADER];
    const second = (await through('/orders/b')).headers[HEADER];
    expect(first).toBeTypeOf('string');
    expect(second).toBe(first);
    // Another route (another audience) has its own.
    expect((await through('/billing/a')).headers[HEADER]).not.toBe(first);
  });
});
