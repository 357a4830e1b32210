// Routes that ask for more (RFC 9470): a rule naming `acr` or `maxAgeS`
// refuses a token whose login is too weak or too old with 401, the exact
// challenge and a `$diagnoses` body saying what is missing; a route or a
// method without such a rule takes the same token.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

const PASSWORD = 'urn:gatehouse:acr:password';
const MFA = 'urn:gatehouse:acr:mfa';

let upstream: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startUpstream();
  const routes = [
    { name: 'payments', prefix: '/payments', upstreams: [upstream.url], authorize: { acr: [MFA] } },
    { name: 'profile', prefix: '/profile', upstreams: [upstream.url], authorize: { methods: { PUT: { acr: [MFA], maxAgeS: 300 } } } },
    { name: 'fresh', prefix: '/fresh', upstreams: [upstream.url], authorize: { maxAgeS: 60 } },
    { name: 'basic', prefix: '/basic', upstreams: [upstream.url], authorize: { acr: [PASSWORD] } },
    { name: 'open', prefix: '/open', upstreams: [upstream.url] },
  ];
  gw = await startTestGateway({ users: [{ name: 'alice', password: 'alice-password-1' }], config: { routes } });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});
afterEach(() => {
  vi.useRealTimers();
});

function call(method: string, path: string, token: string): Promise<Response> {
  return fetch(`${gw.url}${path}`, { method, headers: { authorization: `Bearer ${token}` } });
}

async function detailOf(response: Response): Promise<string> {
  const body = (await response.json()) as { $diagnoses: Array<{ $detail: string }> };
  return body.$diagnoses[0]!.$detail;
}

describe('a route that asks for a level', () => {
  it('refuses a password-only token with 401, the exact RFC 9470 challenge and what is missing', async () => {
    const { access_token } = await login(gw.url, 'alice', 'alice-password-1');
    const seen = upstream.seen.length;
    const response = await call('GET', '/payments/1', access_token);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(`Bearer error="insufficient_user_authentication", acr_values="${MFA}"`);
    expect(await detailOf(response)).toBe(
      `401 (Unauthorized) - insufficient_user_authentication: needs a login at one of the levels ${MFA} (this token's login reached ${PASSWORD})`,
    );
    expect(upstream.seen.length).toBe(seen);
  });

  it('takes the same token where the rule asks for its level, and where no rule asks at all', async () => {
    const { access_token } = await login(gw.url, 'alice', 'alice-password-1');
    expect((await call('GET', '/basic/1', access_token)).status).toBe(200);
    expect((await call('GET', '/open/1', access_token)).status).toBe(200);
  });

  it('asks only on the method whose rule names it, with every requirement of that rule in the challenge', async () => {
    const { access_token } = await login(gw.url, 'alice', 'alice-password-1');
    expect((await call('GET', '/profile/me', access_token)).status).toBe(200);
    const response = await call('PUT', '/profile/me', access_token);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(`Bearer error="insufficient_user_authentication", acr_values="${MFA}", max_age=300`);
  });
});

describe('a route that asks for a recent login', () => {
  it('takes a fresh login and refuses it once older than maxAgeS, a refresh not making it younger', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    expect((await call('GET', '/fresh/1', tokens.access_token)).status).toBe(200);
    vi.setSystemTime(Date.now() + 90_000);
    const refreshed = await fetch(`${gw.url}/api/v1/auth/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refresh_token: tokens.refresh_token }),
    });
    const { access_token } = (await refreshed.json()) as { access_token: string };
    for (const token of [tokens.access_token, access_token]) {
      const response = await call('GET', '/fresh/1', token);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer error="insufficient_user_authentication", max_age=60');
      expect(await detailOf(response)).toMatch(/needs a login within the last 60 s \(this token's was 9\d s ago\)$/);
    }
  });
});
