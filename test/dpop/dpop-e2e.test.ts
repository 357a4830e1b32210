// DPoP (RFC 9449) end to end: a real gateway on a port of its own, a real
// upstream, and proofs made the way clients make them (jose), one refusal a
// test. Each refusal names the attack it stops.
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/users/passwords.js';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import { clientKey, handMade, proof, tokenHash, type ClientKey } from '../helpers/dpop.js';
import { jwtPayload, login, postJson, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { startUpstream, type EchoBody, type Upstream } from '../helpers/upstream.js';

let upstream: Upstream;
let gw: TestGateway;
let key: ClientKey;
let bound: TokenSetBody;

const apiUrl = () => `${gw.url}/api/orders`;

async function dpopLogin(url: string, withKey: ClientKey): Promise<Response> {
  return postJson(
    `${url}/api/v1/auth/login`,
    { username: 'alice', password: 'alice-password-1' },
    { dpop: await proof(withKey, 'POST', `${url}/api/v1/auth/login`) },
  );
}

/** A GET of `url` with `Authorization: <scheme> <token>` and, when given, a DPoP proof. */
function call(url: string, scheme: string, token: string, dpop?: string, method = 'GET'): Promise<Response> {
  return fetch(url, { method, headers: { authorization: `${scheme} ${token}`, ...(dpop !== undefined && { dpop }) } });
}

async function expectProofRefused(response: Response, detail: RegExp): Promise<void> {
  expectDiagnoses(response.status, await response.text(), 401, detail);
  expect(response.headers.get('www-authenticate')).toMatch(/^DPoP error="invalid_dpop_proof", error_description="[^"]+", algs="ES256 EdDSA PS256 RS256"$/);
}

beforeAll(async () => {
  upstream = await startUpstream();
  const secretHash = await hashPassword('resource-server-secret', { logN: 10, r: 8, p: 1 });
  gw = await startTestGateway({
    config: {
      tokens: { clients: [{ id: 'orders', secretHash }] },
      routes: [
        { name: 'api', prefix: '/api', upstreams: [upstream.url] },
        { name: 'payments', prefix: '/payments', upstreams: [upstream.url], requireDpop: true },
      ],
    },
  });
  key = await clientKey('ES256');
  const response = await dpopLogin(gw.url, key);
  expect(response.status).toBe(200);
  bound = (await response.json()) as TokenSetBody;
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

describe('issuing bound tokens (local mode)', () => {
  it('a login with a proof gets token_type DPoP, and both tokens carry cnf.jkt, the thumbprint of the proof key', () => {
    expect(bound.token_type).toBe('DPoP');
    expect(jwtPayload(bound.access_token).cnf).toEqual({ jkt: key.jkt });
    expect(jwtPayload(bound.refresh_token).cnf).toEqual({ jkt: key.jkt });
  });

  it('a login without a proof answers exactly as before: bearer tokens without cnf', async () => {
    const plain = await login(gw.url, 'alice', 'alice-password-1');
    expect(plain.token_type).toBe('bearer');
    expect(jwtPayload(plain.access_token)).not.toHaveProperty('cnf');
    expect(jwtPayload(plain.refresh_token)).not.toHaveProperty('cnf');
  });

  it('an EdDSA key binds as well as an ES256 one', async () => {
    const ed = await clientKey('EdDSA');
    const tokens = (await (await dpopLogin(gw.url, ed)).json()) as TokenSetBody;
    expect(jwtPayload(tokens.access_token).cnf).toEqual({ jkt: ed.jkt });
    const response = await call(apiUrl(), 'DPoP', tokens.access_token, await proof(ed, 'GET', apiUrl(), { accessToken: tokens.access_token }));
    expect(response.status).toBe(200);
  });

  it('refresh with a proof of the same key gives a new bound access token', async () => {
    const url = `${gw.url}/api/v1/auth/refresh`;
    const response = await postJson(url, { refresh_token: bound.refresh_token }, { dpop: await proof(key, 'POST', url) });
    expect(response.status).toBe(200);
    const refreshed = (await response.json()) as TokenSetBody;
    expect(refreshed.token_type).toBe('DPoP');
    expect(jwtPayload(refreshed.access_token).cnf).toEqual({ jkt: key.jkt });
    expect(refreshed.refresh_token).toBe(bound.refresh_token);
  });

  it('attack: a stolen bound refresh token refreshed with another key is 400 invalid_grant', async () => {
    const url = `${gw.url}/api/v1/auth/refresh`;
    const thief = await clientKey('ES256');
    const response = await postJson(url, { refresh_token: bound.refresh_token }, { dpop: await proof(thief, 'POST', url) });
    expectDiagnoses(response.status, await response.text(), 400, /^400 \(Bad Request\) - invalid_grant: invalid refresh token$/);
  });

  it('attack: a stolen bound refresh token refreshed without any proof is 400 invalid_grant', async () => {
    const response = await postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: bound.refresh_token });
    expectDiagnoses(response.status, await response.text(), 400, /^400 \(Bad Request\) - invalid_grant: invalid refresh token$/);
  });

  it('a login whose proof is bad is 400 invalid_dpop_proof, before the password is looked at', async () => {
    const url = `${gw.url}/api/v1/auth/login`;
    const response = await postJson(url, { username: 'alice', password: 'alice-password-1' }, { dpop: await proof(key, 'GET', url) });
    expectDiagnoses(response.status, await response.text(), 400, /^400 \(Bad Request\) - invalid_dpop_proof: the DPoP proof htm is not the request method$/);
  });

  it('/oauth/token binds too, and answers a bad proof with the RFC 6749 error object', async () => {
    const url = `${gw.url}/oauth/token`;
    const form = new URLSearchParams({ grant_type: 'password', username: 'alice', password: 'alice-password-1' });
    const good = await fetch(url, { method: 'POST', body: form, headers: { dpop: await proof(key, 'POST', url) } });
    expect(good.status).toBe(200);
    const tokens = (await good.json()) as TokenSetBody;
    expect(tokens.token_type).toBe('DPoP');
    expect(jwtPayload(tokens.refresh_token).cnf).toEqual({ jkt: key.jkt });
    const bad = await fetch(url, { method: 'POST', body: form, headers: { dpop: await proof(key, 'POST', `${gw.url}/elsewhere`) } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'invalid_dpop_proof', error_description: 'the DPoP proof htu is not the request URL' });
  });

  it('introspection (RFC 7662) names the key a bound token is bound to (RFC 9449 6.2), and none for a plain one', async () => {
    const introspect = async (token: string) => {
      const response = await fetch(`${gw.url}/oauth/introspect`, {
        method: 'POST',
        body: new URLSearchParams({ token, client_id: 'orders', client_secret: 'resource-server-secret' }),
      });
      return (await response.json()) as Record<string, unknown>;
    };
    expect(await introspect(bound.access_token)).toMatchObject({ active: true, cnf: { jkt: key.jkt } });
    expect(await introspect((await login(gw.url, 'alice', 'alice-password-1')).access_token)).not.toHaveProperty('cnf');
  });

  it('discovery advertises dpop_signing_alg_values_supported', async () => {
    const metadata = (await (await fetch(`${gw.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(metadata.dpop_signing_alg_values_supported).toEqual(['ES256', 'EdDSA', 'PS256', 'RS256']);
  });
});

describe('enforcing bound tokens on a proxied route', () => {
  it('a bound token with its proof reaches the upstream; the DPoP header does not, the key thumbprint does', async () => {
    const response = await call(apiUrl(), 'DPoP', bound.access_token, await proof(key, 'GET', apiUrl(), { accessToken: bound.access_token }));
    expect(response.status).toBe(200);
    const seen = (await response.json()) as EchoBody;
    expect(seen.headers).not.toHaveProperty('dpop');
    expect(seen.headers).not.toHaveProperty('authorization');
    expect(seen.headers['x-gatehouse-dpop-jkt']).toBe(key.jkt);
  });

  it('a client cannot claim a thumbprint: its own x-gatehouse-dpop-jkt never reaches the upstream', async () => {
    const plain = await login(gw.url, 'alice', 'alice-password-1');
    const response = await fetch(apiUrl(), { headers: { authorization: `Bearer ${plain.access_token}`, 'x-gatehouse-dpop-jkt': key.jkt, dpop: 'x.y.z' } });
    expect(response.status).toBe(200);
    const seen = (await response.json()) as EchoBody;
    expect(seen.headers).not.toHaveProperty('x-gatehouse-dpop-jkt');
    expect(seen.headers).not.toHaveProperty('dpop');
  });

  it('attack: a stolen bound token presented as Bearer is 401 with the DPoP challenge', async () => {
    const response = await call(apiUrl(), 'Bearer', bound.access_token);
    expectDiagnoses(response.status, await response.text(), 401, /invalid_token: a DPoP-bound token needs the DPoP scheme and a proof$/);
    expect(response.headers.get('www-authenticate')).toMatch(/^DPoP error="invalid_token", .*algs="ES256 EdDSA PS256 RS256"$/);
  });

  it('attack: the bound refresh token used as a bearer (spec 5.9) without its proof is 401 too', async () => {
    const response = await call(apiUrl(), 'Bearer', bound.refresh_token);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^DPoP error="invalid_token"/);
    const proven = await call(apiUrl(), 'DPoP', bound.refresh_token, await proof(key, 'GET', apiUrl(), { accessToken: bound.refresh_token }));
    expect(proven.status).toBe(200);
  });

  it('attack: a bound token under the DPoP scheme without any proof is 401 invalid_dpop_proof', async () => {
    await expectProofRefused(await call(apiUrl(), 'DPoP', bound.access_token), /a DPoP proof is required$/);
  });

  it('attack: a proof signed with another key than the token is bound to is 401', async () => {
    const thief = await clientKey('ES256');
    const response = await call(apiUrl(), 'DPoP', bound.access_token, await proof(thief, 'GET', apiUrl(), { accessToken: bound.access_token }));
    await expectProofRefused(response, /signed with another key than the token is bound to$/);
  });

  it('attack: a replayed proof (same jti) is refused on the same instance', async () => {
    const once = await proof(key, 'GET', apiUrl(), { accessToken: bound.access_token });
    expect((await call(apiUrl(), 'DPoP', bound.access_token, once)).status).toBe(200);
    await expectProofRefused(await call(apiUrl(), 'DPoP', bound.access_token, once), /the DPoP proof was used before$/);
  });

  it('attack: a proof for another method (htm) is 401', async () => {
    const response = await call(apiUrl(), 'DPoP', bound.access_token, await proof(key, 'POST', apiUrl(), { accessToken: bound.access_token }));
    await expectProofRefused(response, /htm is not the request method$/);
  });

  it('attack: a proof for another URL (htu) is 401; its query and fragment do not count', async () => {
    const other = await call(apiUrl(), 'DPoP', bound.access_token, await proof(key, 'GET', `${gw.url}/api/payments`, { accessToken: bound.access_token }));
    await expectProofRefused(other, /htu is not the request URL$/);
    const withQuery = await call(
      `${apiUrl()}?page=2`,
      'DPoP',
      bound.access_token,
      await proof(key, 'GET', `${apiUrl()}#top`, { accessToken: bound.access_token }),
    );
    expect(withQuery.status).toBe(200);
  });

  it('attack: a proof without ath, or with the hash of another token, is 401', async () => {
    const missing = await call(apiUrl(), 'DPoP', bound.access_token, await proof(key, 'GET', apiUrl(), { accessToken: bound.access_token, ath: null }));
    await expectProofRefused(missing, /ath is not the hash of the token$/);
    const other = await call(apiUrl(), 'DPoP', bound.access_token, await proof(key, 'GET', apiUrl(), { ath: tokenHash(bound.refresh_token) }));
    await expectProofRefused(other, /ath is not the hash of the token$/);
  });

  it('attack: a proof with alg none is 401', async () => {
    const now = Math.floor(Date.now() / 1000);
    const unsigned = handMade(
      { alg: 'none', typ: 'dpop+jwt', jwk: key.jwk },
      { htm: 'GET', htu: apiUrl(), iat: now, jti: crypto.randomUUID(), ath: tokenHash(bound.access_token) },
    );
    await expectProofRefused(await call(apiUrl(), 'DPoP', bound.access_token, unsigned), /alg is not one this gateway accepts$/);
  });

  it('attack: a proof with HS256 (a secret the attacker chose) is 401', async () => {
    const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'dpop+jwt', jwk: key.jwk })).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const payload = Buffer.from(JSON.stringify({ htm: 'GET', htu: apiUrl(), iat: now, jti: crypto.randomUUID(), ath: tokenHash(bound.access_token) })).toString(
      'base64url',
    );
    const signature = createHmac('sha256', 'attacker-secret').update(`${header}.${payload}`).digest('base64url');
    await expectProofRefused(await call(apiUrl(), 'DPoP', bound.access_token, `${header}.${payload}.${signature}`), /alg is not one this gateway accepts$/);
  });

  it('attack: a proof whose jwk holds the private key is 401', async () => {
    const { exportJWK } = await import('jose');
    const privateJwk = await exportJWK(key.privateKey);
    const response = await call(apiUrl(), 'DPoP', bound.access_token, await proof(key, 'GET', apiUrl(), { accessToken: bound.access_token, jwk: privateJwk }));
    await expectProofRefused(response, /jwk holds private key material$/);
  });

  it('attack: a stale proof (iat long past) and one from the future are 401', async () => {
    const now = Math.floor(Date.now() / 1000);
    const stale = await call(apiUrl(), 'DPoP', bound.access_token, await proof(key, 'GET', apiUrl(), { accessToken: bound.access_token, iat: now - 3600 }));
    await expectProofRefused(stale, /iat is outside the accepted window$/);
    const future = await call(apiUrl(), 'DPoP', bound.access_token, await proof(key, 'GET', apiUrl(), { accessToken: bound.access_token, iat: now + 3600 }));
    await expectProofRefused(future, /iat is outside the accepted window$/);
  });

  it('attack: a proof of another typ is 401', async () => {
    const response = await call(apiUrl(), 'DPoP', bound.access_token, await proof(key, 'GET', apiUrl(), { accessToken: bound.access_token, typ: 'JWT' }));
    await expectProofRefused(response, /typ is not dpop\+jwt$/);
  });

  it('attack: an oversized proof is 401 before it is parsed', async () => {
    const response = await call(
      apiUrl(),
      'DPoP',
      bound.access_token,
      await proof(key, 'GET', apiUrl(), { accessToken: bound.access_token, extra: { padding: 'x'.repeat(5000) } }),
    );
    await expectProofRefused(response, /not one compact JWS of a sensible size$/);
  });

  it('a plain token under the DPoP scheme is 401: the scheme promises a binding the token lacks', async () => {
    const plain = await login(gw.url, 'alice', 'alice-password-1');
    const response = await call(apiUrl(), 'DPoP', plain.access_token, await proof(key, 'GET', apiUrl(), { accessToken: plain.access_token }));
    expectDiagnoses(response.status, await response.text(), 401, /the token is not DPoP-bound$/);
  });
});

describe('a route with requireDpop', () => {
  it('attack: a plain bearer token (copyable, usable anywhere) is 401 with the DPoP challenge there', async () => {
    const plain = await login(gw.url, 'alice', 'alice-password-1');
    const response = await call(`${gw.url}/payments/1`, 'Bearer', plain.access_token);
    expectDiagnoses(response.status, await response.text(), 401, /this route admits only DPoP-bound tokens$/);
    expect(response.headers.get('www-authenticate')).toMatch(/^DPoP error="invalid_token", .*algs="ES256 EdDSA PS256 RS256"$/);
  });

  it('admits a bound token with its proof', async () => {
    const url = `${gw.url}/payments/1`;
    expect((await call(url, 'DPoP', bound.access_token, await proof(key, 'GET', url, { accessToken: bound.access_token }))).status).toBe(200);
  });
});

describe('enforcing bound tokens on the gateway endpoints', () => {
  it('the status endpoint, the account API and logout ask for the proof as the proxy does', async () => {
    const tokens = (await (await dpopLogin(gw.url, key)).json()) as TokenSetBody;
    const statusUrl = `${gw.url}/api/v1/requests/00000000-0000-4000-8000-000000000000/status`;
    expect((await call(statusUrl, 'Bearer', tokens.access_token)).status).toBe(401);
    // Past the bearer check: an unknown id is 404.
    expect((await call(statusUrl, 'DPoP', tokens.access_token, await proof(key, 'GET', statusUrl, { accessToken: tokens.access_token }))).status).toBe(404);

    const accountUrl = `${gw.url}/api/v1/account`;
    expect((await call(accountUrl, 'Bearer', tokens.access_token)).status).toBe(401);
    expect((await call(accountUrl, 'DPoP', tokens.access_token, await proof(key, 'GET', accountUrl, { accessToken: tokens.access_token }))).status).toBe(200);

    const logoutUrl = `${gw.url}/api/v1/auth/logout`;
    expect((await call(logoutUrl, 'Bearer', tokens.access_token, undefined, 'POST')).status).toBe(401);
    const out = await call(logoutUrl, 'DPoP', tokens.access_token, await proof(key, 'POST', logoutUrl, { accessToken: tokens.access_token }), 'POST');
    expect(out.status).toBe(204);
    expect((await call(apiUrl(), 'DPoP', tokens.access_token, await proof(key, 'GET', apiUrl(), { accessToken: tokens.access_token }))).status).toBe(401);
  });
});
