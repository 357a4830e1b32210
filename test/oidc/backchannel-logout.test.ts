// OpenID Connect Back-Channel Logout 1.0 against the real oidc-provider with
// its backchannelLogout feature on: a logout at the provider (its own code
// signs the logout token and POSTs it to instance A) ends the session on
// every instance, so a stream and an upload held open through instance B
// end. Logout tokens the provider would never send — forged, replayed,
// expired, wrongly addressed, malformed — are refused with 400 and change
// nothing; an address sending too many of them is throttled.
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BACKCHANNEL_LOGOUT_EVENT } from '../../src/oidc/backchannel-logout.js';
import { jwtPayload, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startOpenIdProvider, TEST_CLIENT, TEST_RESOURCE, type TestOpenIdProvider } from '../helpers/openid-provider.js';
import { freePort } from '../helpers/ports.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { expectStreamEnded, expectUploadRefused, openStream, openUpload, startHoldingUpstream, type HoldingUpstream } from '../proxy/session-end-support.js';

const FAILURES_PER_ADDRESS = 20;

let redis: { url: string; close(): Promise<void> };
let op: TestOpenIdProvider;
let upstream: HoldingUpstream;
let a: TestGateway;
let b: TestGateway;

beforeAll(async () => {
  redis = await testRedisUrl();
  upstream = await startHoldingUpstream();
  const port = await freePort();
  op = await startOpenIdProvider(
    { alice: { password: 'alice-password-1' }, bob: { password: 'bob-password-1' } },
    { backchannelLogoutUri: `http://127.0.0.1:${port}/oauth/backchannel-logout` },
  );
  const config = {
    identity: { provider: 'oidc', issuer: op.issuer, ...TEST_CLIENT, audience: TEST_RESOURCE, scopes: ['openid', 'offline_access', 'api'] },
    store: { url: redis.url, keyPrefix: uniquePrefix() },
    limits: { login: { failuresPerAddress: FAILURES_PER_ADDRESS } },
    routes: [{ name: 'live', prefix: '/live', upstreams: [upstream.url] }],
  };
  a = await startTestGateway({ port, config });
  b = await startTestGateway({ config });
  for (const gateway of [a, b]) {
    await vi.waitFor(async () => expect((await fetch(`${gateway.adminUrl}/readyz`)).status).toBe(200), { timeout: 10_000, interval: 50 });
  }
});

afterAll(async () => {
  await a?.close();
  await b?.close();
  await op?.close();
  await upstream?.close();
  await redis?.close();
});

async function login(username: string, password: string): Promise<{ token: string; sid: string }> {
  const response = await postJson(`${a.url}/api/v1/auth/login`, { username, password });
  expect(response.status).toBe(200);
  const { access_token: token } = (await response.json()) as { access_token: string };
  return { token, sid: jwtPayload(token).sid as string };
}

/** 404 (an unknown request, for a caller admitted) while the session lives; 401 once it ended. */
async function statusOn(gateway: TestGateway, token: string): Promise<number> {
  return (await fetch(`${gateway.url}/api/v1/requests/${randomUUID()}/status`, { headers: { authorization: `Bearer ${token}` } })).status;
}

/** Claims of a logout token as the provider would send it for `sid`, with `overrides` (undefined removes a claim). */
function claims(sid: string, overrides: Record<string, unknown> = {}): JWTPayload {
  const now = Math.floor(Date.now() / 1000);
  const base: Record<string, unknown> = {
    iss: op.issuer,
    aud: TEST_CLIENT.clientId,
    iat: now,
    exp: now + 120,
    jti: randomUUID(),
    sub: 'alice',
    sid,
    events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
    ...overrides,
  };
  return Object.fromEntries(Object.entries(base).filter(([, value]) => value !== undefined));
}

async function post(gateway: TestGateway, logoutToken: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${gateway.url}/oauth/backchannel-logout`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ logout_token: logoutToken }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

describe('back-channel logout from the real oidc-provider', () => {
  it('a logout at the provider ends the session on every instance: a stream and an upload held open through the other instance end', async () => {
    const { token, sid } = await login('alice', 'alice-password-1');
    const [stream, upload] = await Promise.all([openStream(`${b.url}/live/events`, token, upstream), openUpload(`${b.url}/live/upload`, token, upstream)]);
    await op.logout('alice', sid); // rejects unless the gateway answered 200
    await Promise.all([expectStreamEnded(stream), expectUploadRefused(upload)]);
    expect([await statusOn(a, token), await statusOn(b, token)]).toEqual([401, 401]);
  });

  it("ends only the session it names: the user's other session lives on", async () => {
    const [ended, kept] = [await login('bob', 'bob-password-1'), await login('bob', 'bob-password-1')];
    await op.logout('bob', ended.sid);
    expect([await statusOn(b, ended.token), await statusOn(b, kept.token)]).toEqual([401, 404]);
  });
});

describe('logout tokens the provider would never send are refused (400) and change nothing', () => {
  let session: { token: string; sid: string };
  beforeAll(async () => {
    session = await login('alice', 'alice-password-1');
  });

  async function expectRefused(logoutToken: string, description: RegExp): Promise<void> {
    const { status, body } = await post(a, logoutToken);
    expect(status).toBe(400);
    expect(body).toEqual({ error: 'invalid_request', error_description: expect.stringMatching(description) });
    expect([await statusOn(a, session.token), await statusOn(b, session.token)]).toEqual([404, 404]);
  }

  it('forged: signed with a key that is not in the provider key set', async () => {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const kid = ((await exportJWK(privateKey)).kid as string | undefined) ?? 'forged-key';
    const forged = await new SignJWT(claims(session.sid)).setProtectedHeader({ alg: 'RS256', kid, typ: 'logout+jwt' }).sign(privateKey);
    await expectRefused(forged, /not valid/);
  });

  it('forged: unsigned (alg none)', async () => {
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'logout+jwt' })).toString('base64url');
    const payload = Buffer.from(JSON.stringify(claims(session.sid))).toString('base64url');
    await expectRefused(`${header}.${payload}.`, /not valid/);
  });

  it('replayed: a token used once is refused the second time, on either instance', async () => {
    const throwaway = await login('alice', 'alice-password-1');
    const token = await op.sign(claims(throwaway.sid));
    expect((await post(a, token)).status).toBe(200);
    expect(await statusOn(b, throwaway.token)).toBe(401);
    await expectRefused(token, /used before/);
    const { status } = await post(b, token);
    expect(status).toBe(400);
  });

  it('expired: past its exp, or issued too long ago', async () => {
    const hourAgo = Math.floor(Date.now() / 1000) - 3600;
    await expectRefused(await op.sign(claims(session.sid, { iat: hourAgo, exp: hourAgo + 120 })), /not valid/);
    await expectRefused(await op.sign(claims(session.sid, { iat: hourAgo, exp: undefined })), /not valid/);
  });

  it('wrongly addressed: another audience, or another issuer', async () => {
    await expectRefused(await op.sign(claims(session.sid, { aud: 'another-client' })), /not valid/);
    await expectRefused(await op.sign(claims(session.sid, { iss: 'https://impostor.example' })), /not valid/);
  });

  it('not a logout token: no back-channel logout event, a nonce (an ID token), no jti, no sid', async () => {
    await expectRefused(await op.sign(claims(session.sid, { events: undefined })), /event/);
    await expectRefused(await op.sign(claims(session.sid, { events: { 'http://schemas.openid.net/event/other': {} } })), /event/);
    await expectRefused(await op.sign(claims(session.sid, { nonce: 'n-0S6_WzA2Mj' })), /nonce/);
    await expectRefused(await op.sign(claims(session.sid, { jti: undefined })), /not valid/);
    await expectRefused(await op.sign(claims(session.sid, { sid: undefined, sub: undefined })), /neither sid nor sub/);
  });

  it('a request without exactly one logout_token', async () => {
    const response = await fetch(`${a.url}/oauth/backchannel-logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'logout_token=a&logout_token=b',
    });
    expect([response.status, await response.json()]).toEqual([400, { error: 'invalid_request', error_description: 'exactly one logout_token is required' }]);
    // The OAuth error format, with the header set every OAuth error of the gateway carries (RFC 6749 5.1).
    expect([response.headers.get('cache-control'), response.headers.get('pragma')]).toEqual(['no-store', 'no-cache']);
  });

  it('is throttled as the token endpoint is: an address past its refused tokens gets 429, before any verification', async () => {
    let status = 0;
    for (let i = 0; i <= FAILURES_PER_ADDRESS && status !== 429; i++) status = (await post(a, 'not-a-jwt')).status;
    expect(status).toBe(429);
    // Even a good token waits now: nothing is verified for a blocked address.
    const throwaway = await login('alice', 'alice-password-1');
    const { status: blocked, body } = await post(a, await op.sign(claims(throwaway.sid)));
    expect([blocked, body.error]).toEqual([429, 'too_many_requests']);
    expect(await statusOn(b, throwaway.token)).toBe(404);
  });
});
