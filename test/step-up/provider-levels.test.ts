// Step-up in OpenID Provider mode, against a real oidc-provider with two
// levels: the provider's `acr` and `auth_time` are what a route's rule
// checks, a step-up login passes `acr_values` and `max_age` on to the
// provider, and a provider login below the levels asked is no step-up.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import { postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startOpenIdProvider, TEST_CLIENT, TEST_RESOURCE, type TestOpenIdProvider } from '../helpers/openid-provider.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

const LOW = 'urn:example:loa:1';
const HIGH = 'urn:example:loa:2';

let op: TestOpenIdProvider;
let upstream: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  op = await startOpenIdProvider(
    { carol: { password: 'carol-password', secondFactor: true }, dave: { password: 'dave-password' } },
    { acrValues: [LOW, HIGH] },
  );
  upstream = await startUpstream();
  gw = await startTestGateway({
    config: {
      identity: {
        provider: 'oidc',
        issuer: op.issuer,
        ...TEST_CLIENT,
        audience: TEST_RESOURCE,
        scopes: ['openid', 'offline_access', 'api'],
        acrValues: [LOW, HIGH],
      },
      routes: [
        { name: 'payments', prefix: '/payments', upstreams: [upstream.url], authorize: { acr: [HIGH] } },
        { name: 'basic', prefix: '/basic', upstreams: [upstream.url], authorize: { acr: [LOW] } },
        { name: 'fresh', prefix: '/fresh', upstreams: [upstream.url], authorize: { maxAgeS: 60 } },
      ],
    },
  });
  await vi.waitFor(async () => expect((await fetch(`${gw.adminUrl}/readyz`)).status).toBe(200), { timeout: 10_000, interval: 50 });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
  await op?.close();
});
afterEach(() => {
  vi.useRealTimers();
});

async function providerLogin(body: Record<string, unknown>): Promise<Response> {
  return postJson(`${gw.url}/api/v1/auth/login`, body);
}

async function accessToken(body: Record<string, unknown>): Promise<string> {
  const response = await providerLogin(body);
  expect(response.status).toBe(200);
  return ((await response.json()) as { access_token: string }).access_token;
}

function call(path: string, token: string): Promise<Response> {
  return fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
}

describe('levels from the provider', () => {
  it('refuses a token of the lower level where the higher is asked, with the exact RFC 9470 challenge', async () => {
    const token = await accessToken({ username: 'carol', password: 'carol-password' });
    const seen = upstream.seen.length;
    const response = await call('/payments/1', token);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(`Bearer error="insufficient_user_authentication", acr_values="${HIGH}"`);
    expectDiagnoses(
      response.status,
      await response.text(),
      401,
      `401 (Unauthorized) - insufficient_user_authentication: needs a login at one of the levels ${HIGH} (this token's login reached ${LOW})`,
    );
    expect(upstream.seen.length).toBe(seen);
    // The same token meets a rule asking for its own level.
    expect((await call('/basic/1', token)).status).toBe(200);
  });

  it('sends acr_values to the provider on a step-up, and takes the token it gets back', async () => {
    const before = op.stepUps.length;
    const token = await accessToken({ username: 'carol', password: 'carol-password', acr_values: HIGH });
    expect(op.stepUps.slice(before)).toEqual([{ acr_values: HIGH }]);
    expect((await call('/payments/1', token)).status).toBe(200);
    // A higher level meets a rule asking for a lower one (identity.acrValues ranks them).
    expect((await call('/basic/1', token)).status).toBe(200);
  });

  it('refuses a step-up login the provider answered below the levels asked', async () => {
    const response = await providerLogin({ username: 'dave', password: 'dave-password', acr_values: HIGH });
    expectDiagnoses(
      response.status,
      await response.text(),
      401,
      `401 (Unauthorized) - insufficient_user_authentication: the provider's login reached ${LOW}, not one of ${HIGH}`,
    );
  });
});

describe('the levels in discovery', () => {
  it('lists them at the provider, and a configured level the provider does not list is warned of at start', async () => {
    const discovery = (await (await fetch(`${op.issuer}/.well-known/openid-configuration`)).json()) as { acr_values_supported: string[] };
    expect(discovery.acr_values_supported).toEqual([LOW, HIGH]);
    expect(gw.logs.entries().some((entry) => entry.event === 'oidc_acr_values_unlisted')).toBe(false);
    const misnamed = await startTestGateway({
      config: { identity: { provider: 'oidc', issuer: op.issuer, ...TEST_CLIENT, audience: TEST_RESOURCE, acrValues: [LOW, 'urn:example:loa:3'] } },
    });
    try {
      const warning = await misnamed.logs.next((entry) => entry.event === 'oidc_acr_values_unlisted');
      expect(warning.acrValues).toEqual(['urn:example:loa:3']);
    } finally {
      await misnamed.close();
    }
  });
});

describe('auth_time from the provider', () => {
  it('refuses a login older than maxAgeS with max_age in the challenge, and takes one made with max_age', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const old = await accessToken({ username: 'carol', password: 'carol-password' });
    expect((await call('/fresh/1', old)).status).toBe(200);
    vi.setSystemTime(Date.now() + 90_000);
    const response = await call('/fresh/1', old);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer error="insufficient_user_authentication", max_age=60');
    const before = op.stepUps.length;
    const fresh = await accessToken({ username: 'carol', password: 'carol-password', max_age: 60 });
    expect(op.stepUps.slice(before)).toEqual([{ max_age: '60' }]);
    expect((await call('/fresh/1', fresh)).status).toBe(200);
  });
});
