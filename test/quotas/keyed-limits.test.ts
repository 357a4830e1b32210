// Limits keyed on who calls, sized by tier, all applied: a per-subject rate
// and a per-tenant daily quota on one route; a public route counted by
// address; the 429 names the limit hit, and every answer's RateLimit fields
// (parsed with a structured-field parser) agree with the count.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import { postJson, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';
import { bearerOf, paramsOf, parseRateLimitField, PLAN_USERS } from './support.js';

const ROUTES = (upstream: string) => [
  {
    name: 'api',
    prefix: '/api',
    upstreams: [upstream],
    quotas: [
      { name: 'per-minute', by: 'subject', per: 'minute', limit: 2, tiers: { claim: 'roles', limits: { free: 5, pro: 50, internal: 'unlimited' } } },
      { name: 'tenant-daily', by: 'claim:groups', per: 'day', limit: 8, tiers: { claim: 'roles', limits: { pro: 1000, internal: 'unlimited' } } },
    ],
  },
  { name: 'keyed', prefix: '/keyed', upstreams: [upstream], quotas: [{ name: 'per-key', by: 'apiKey', per: 'hour', limit: 2 }] },
  { name: 'open', prefix: '/open', upstreams: [upstream], auth: 'none', quotas: [{ name: 'anonymous', by: 'address', per: 'minute', limit: 2 }] },
];

let upstream: Upstream;
let gw: TestGateway;
beforeEach(async () => {
  upstream = await startUpstream();
  gw = await startTestGateway({ users: PLAN_USERS, config: { server: { trustedProxies: ['127.0.0.1'] }, routes: ROUTES(upstream.url) } });
});
afterEach(async () => {
  await gw.close();
  await upstream.close();
});

function call(path: string, headers: Record<string, string>): Promise<Response> {
  return fetch(`${gw.url}${path}`, { headers });
}

describe('quotas keyed on who calls', () => {
  it("counts a free user's rate per subject, and tells the count in RateLimit on every answer", async () => {
    const fran = await bearerOf(gw.url, 'fran');
    for (let i = 1; i <= 5; i++) {
      const answer = await call('/api/x', fran);
      expect(answer.status).toBe(200);
      const policy = parseRateLimitField(answer.headers.get('ratelimit-policy'));
      expect(paramsOf(policy, 'per-minute')).toEqual({ q: 5, w: 60 });
      expect(paramsOf(policy, 'tenant-daily')).toMatchObject({ q: 8 });
      const state = parseRateLimitField(answer.headers.get('ratelimit'));
      expect(paramsOf(state, 'per-minute').r).toBe(5 - i);
      expect(paramsOf(state, 'tenant-daily').r).toBe(8 - i);
    }
    const refused = await call('/api/x', fran);
    expectDiagnoses(refused.status, await refused.text(), 429, '429 (Too Many Requests) - slow_down: limit per-minute of route api reached (tier free)');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(12);
    expect(paramsOf(parseRateLimitField(refused.headers.get('ratelimit')), 'per-minute').r).toBe(0);
    expect(upstream.seen).toHaveLength(5);
  });

  it("shares one tenant's daily budget among its members, and a refused request costs no other limit", async () => {
    const fran = await bearerOf(gw.url, 'fran');
    const fred = await bearerOf(gw.url, 'fred');
    for (let i = 0; i < 5; i++) expect((await call('/api/x', fran)).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await call('/api/x', fred)).status).toBe(200);
    const refused = await call('/api/x', fred);
    expectDiagnoses(refused.status, await refused.text(), 429, '429 (Too Many Requests) - slow_down: limit tenant-daily of route api reached (tier default)');
    // Fred's per-minute count was given back: 3 taken of 5, the refused one not.
    expect(paramsOf(parseRateLimitField(refused.headers.get('ratelimit')), 'per-minute').r).toBe(2);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(60);
  });

  it('sizes each limit by tier: a pro user is unaffected, an internal one unlimited and not counted', async () => {
    const fran = await bearerOf(gw.url, 'fran');
    for (let i = 0; i < 5; i++) await call('/api/x', fran);
    expect((await call('/api/x', fran)).status).toBe(429);
    const paula = await bearerOf(gw.url, 'paula');
    for (let i = 0; i < 20; i++) expect((await call('/api/x', paula)).status).toBe(200);
    const ivan = await bearerOf(gw.url, 'ivan');
    const answer = await call('/api/x', ivan);
    expect(answer.status).toBe(200);
    // Nothing counts an unlimited tier: no field names a limit for it.
    expect(answer.headers.get('ratelimit')).toBeNull();
    const metrics = await (await fetch(`${gw.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/gatehouse_quota_decisions_total\{route="api",limit="per-minute",tier="free",outcome="refused"\} 1/);
    expect(metrics).toMatch(/gatehouse_quota_decisions_total\{route="api",limit="per-minute",tier="pro",outcome="taken"\} 20/);
    expect(metrics).toMatch(/gatehouse_quota_decisions_total\{route="api",limit="per-minute",tier="internal",outcome="unlimited"\} 1/);
    // Never a consumer in a label.
    expect(metrics).not.toMatch(/fran|paula|acme|globex/);
  });

  it("counts an API key's sessions per key, and the same user's password session apart", async () => {
    const keyLogin = await postJson(`${gw.url}/api/v1/auth/login`, { username: 'fran', password: gw.apiKeys.fran![0] });
    const byKey = { authorization: `Bearer ${((await keyLogin.json()) as TokenSetBody).access_token}` };
    expect((await call('/keyed/x', byKey)).status).toBe(200);
    expect((await call('/keyed/x', byKey)).status).toBe(200);
    const refused = await call('/keyed/x', byKey);
    expectDiagnoses(refused.status, await refused.text(), 429, '429 (Too Many Requests) - slow_down: limit per-key of route keyed reached (tier default)');
    expect((await call('/keyed/x', await bearerOf(gw.url, 'fran'))).status).toBe(200);
  });

  it('counts an anonymous caller by its address', async () => {
    const from = (address: string) => call('/open/x', { 'x-forwarded-for': address });
    expect((await from('203.0.113.1')).status).toBe(200);
    expect((await from('203.0.113.1')).status).toBe(200);
    const refused = await from('203.0.113.1');
    expectDiagnoses(refused.status, await refused.text(), 429, '429 (Too Many Requests) - slow_down: limit anonymous of route open reached (tier default)');
    expect((await from('203.0.113.2')).status).toBe(200);
  });
});
