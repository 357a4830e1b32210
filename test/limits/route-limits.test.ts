// Per-route request limits: per client address on a public route, per
// subject on an authenticated one; 429 with Retry-After and `$diagnoses`.
// A route without a limit is not counted at all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

let upstream: Upstream;
let gw: TestGateway;
beforeAll(async () => {
  upstream = await startUpstream();
  gw = await startTestGateway({
    config: {
      server: { trustedProxies: ['127.0.0.1'] },
      routes: [
        { prefix: '/public', upstreams: [upstream.url], auth: 'none', rateLimit: { points: 3, durationS: 60 } },
        { prefix: '/orders', upstreams: [upstream.url], rateLimit: { points: 2, durationS: 60 } },
        { prefix: '/free', upstreams: [upstream.url], auth: 'none' },
      ],
    },
  });
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

function from(address: string, path: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${gw.url}${path}`, { headers: { 'x-forwarded-for': address, ...headers } });
}

describe('per-route request limits', () => {
  it('limits a public route per client address', async () => {
    for (let i = 0; i < 3; i++) expect((await from('203.0.113.1', '/public/x')).status).toBe(200);
    const refused = await from('203.0.113.1', '/public/x');
    expectDiagnoses(refused.status, await refused.text(), 429, /^429 \(Too Many Requests\) - slow_down: request limit of this route reached$/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect((await from('203.0.113.2', '/public/x')).status).toBe(200);
  });

  it('limits an authenticated route per subject, whatever the address', async () => {
    const alice = { authorization: `Bearer ${(await login(gw.url, 'alice', 'alice-password-1')).access_token}` };
    const bob = { authorization: `Bearer ${(await login(gw.url, 'bob', 'bob-password-1')).access_token}` };
    expect((await from('198.51.100.1', '/orders/1', alice)).status).toBe(200);
    expect((await from('198.51.100.2', '/orders/1', alice)).status).toBe(200);
    expect((await from('198.51.100.3', '/orders/1', alice)).status).toBe(429);
    expect((await from('198.51.100.3', '/orders/1', bob)).status).toBe(200);
    const metrics = await (await fetch(`${gw.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/gatehouse_rate_limited_total\{route="\/orders"\} 1/);
  });

  it('does not count a route without a limit', async () => {
    for (let i = 0; i < 10; i++) expect((await from('203.0.113.9', '/free/x')).status).toBe(200);
  });
});
