// Issue 22, item 1: load shedding on event-loop delay. While the loop is late,
// work without a credential known good is refused from the request head
// before work with one, and /healthz and /readyz say so and keep answering.
// The loop's reading is the test's own (LoadShedder.judge): the sampler's
// interval is an hour here, so the machine's own load changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextEvent } from '../helpers/events.js';
import { postJson, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

const ALICE_HOME = '198.51.100.7';
const NEW_ADDRESS = '203.0.113.9';
/** Late enough for the first level (50 ms by default), not for the second (1 s). */
const LATE = { delayMs: 200, utilization: 1 };
const LATER_STILL = { delayMs: 1500, utilization: 1 };
const ON_TIME = { delayMs: 0, utilization: 0.1 };

let upstream: Upstream;
let gw: TestGateway;
let alice: TokenSetBody;
let bob: TokenSetBody;

const from = (address: string) => ({ 'x-forwarded-for': address });
const loginFrom = (address: string, username: string, password: string) => postJson(`${gw.url}/api/v1/auth/login`, { username, password }, from(address));
const refreshFrom = (address: string, refreshToken: string) => postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: refreshToken }, from(address));
const get = (address: string, token: string) => fetch(`${gw.url}/orders/1`, { headers: { ...from(address), authorization: `Bearer ${token}` } });
const health = async (path: '/healthz' | '/readyz') => {
  const response = await fetch(`${gw.adminUrl}${path}`);
  return { status: response.status, body: (await response.json()) as { status: string; load: { shedding: string; eventLoopDelayMs: number } } };
};

async function expectShed(response: Response): Promise<void> {
  expect(response.status).toBe(503);
  expect(response.headers.get('retry-after')).toBe('1');
  expect(await response.text()).toContain('the gateway is overloaded');
}

beforeAll(async () => {
  upstream = await startUpstream();
  gw = await startTestGateway({
    config: {
      // Loopback is the "proxy" in front: each test client names its address in X-Forwarded-For.
      server: { trustedProxies: ['127.0.0.1'] },
      limits: {
        loadShedding: { enabled: true, sampleIntervalMs: 3_600_000, coolDownMs: 0 },
        // Shed refusals are held as the others are; not for a whole second in a test.
        abuse: { holdMs: 0 },
      },
      routes: [{ name: 'orders', prefix: '/orders', upstreams: [upstream.url] }],
    },
  });
  alice = (await (await loginFrom(ALICE_HOME, 'alice', 'alice-password-1')).json()) as TokenSetBody;
  bob = (await (await loginFrom('198.51.100.8', 'bob', 'bob-password-1')).json()) as TokenSetBody;
  // Alice's token is admitted once: from now on the cache answers for it. Bob's never was.
  expect((await get(ALICE_HOME, alice.access_token)).status).toBe(200);
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

describe('issue 22: load shedding on event-loop delay', () => {
  it('while the loop is late, unauthenticated work is refused from its head (503 overloaded), a cached token passes, health says degraded', async () => {
    const changed = nextEvent<[string]>(gw.gateway.load, 'changed');
    gw.gateway.load.judge(LATE);
    expect((await changed)[0]).toBe('unauthenticated');

    // Unauthenticated work from an address without a success: a login, a refresh, a token endpoint request, garbage and never-verified bearer tokens.
    await expectShed(await loginFrom(NEW_ADDRESS, 'bob', 'bob-password-1'));
    await expectShed(await refreshFrom(NEW_ADDRESS, bob.refresh_token));
    await expectShed(await get(NEW_ADDRESS, 'garbage'));
    await expectShed(await get(NEW_ADDRESS, bob.access_token));
    const token = await fetch(`${gw.url}/oauth/token`, {
      method: 'POST',
      headers: { ...from(NEW_ADDRESS), 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=password&username=bob&password=bob-password-1',
    });
    expect(token.status).toBe(503);
    expect(await token.json()).toMatchObject({ error: 'temporarily_unavailable' });

    // Authenticated work passes: a cached token from anywhere, and the logins and refreshes of an address with a recent success.
    expect((await get(NEW_ADDRESS, alice.access_token)).status).toBe(200);
    const refreshed = await refreshFrom(ALICE_HOME, alice.refresh_token);
    expect(refreshed.status).toBe(200);
    alice = (await refreshed.json()) as TokenSetBody;
    expect((await loginFrom(ALICE_HOME, 'alice', 'alice-password-1')).status).toBe(200);

    // The admin listener is not shed, and says what is going on.
    const healthz = await health('/healthz');
    expect(healthz).toMatchObject({ status: 200, body: { status: 'degraded', load: { shedding: 'unauthenticated', eventLoopDelayMs: 200 } } });
    const readyz = await health('/readyz');
    expect(readyz).toMatchObject({ status: 200, body: { status: 'degraded', load: { shedding: 'unauthenticated' } } });
    const metrics = await (await fetch(`${gw.adminUrl}/metrics`)).text();
    expect(metrics).toContain('gatehouse_shed_requests_total{level="unauthenticated"} 5');

    // On time again: the same login goes through, and health is ok. Alice's new token is admitted once (cached).
    gw.gateway.load.judge(ON_TIME);
    expect((await loginFrom(NEW_ADDRESS, 'bob', 'bob-password-1')).status).toBe(200);
    expect((await get(ALICE_HOME, alice.access_token)).status).toBe(200);
    expect(await health('/healthz')).toMatchObject({ status: 200, body: { status: 'ok', load: { shedding: 'none' } } });
    expect(await health('/readyz')).toMatchObject({ status: 200, body: { status: 'ready' } });
  });

  it('when the loop is later still, every request is shed, cached tokens too, and /healthz still answers', async () => {
    gw.gateway.load.judge(LATER_STILL);
    await expectShed(await get(ALICE_HOME, alice.access_token));
    await expectShed(await loginFrom(ALICE_HOME, 'alice', 'alice-password-1'));
    expect(await health('/healthz')).toMatchObject({ status: 200, body: { status: 'degraded', load: { shedding: 'all', eventLoopDelayMs: 1500 } } });
    expect(await (await fetch(`${gw.adminUrl}/metrics`)).text()).toContain('gatehouse_shed_requests_total{level="all"} 2');

    // Back down a level: the cached token passes again, garbage is still shed.
    gw.gateway.load.judge(LATE);
    expect((await get(ALICE_HOME, alice.access_token)).status).toBe(200);
    await expectShed(await get(ALICE_HOME, 'garbage'));
    gw.gateway.load.judge(ON_TIME);
    expect((await get(ALICE_HOME, 'garbage')).status).toBe(401);
  });

  it('a shed request is no strike against its address: after shedding, it is no suspect', async () => {
    const address = '203.0.113.77';
    gw.gateway.load.judge(LATE);
    for (let i = 0; i < 5; i++) await expectShed(await get(address, `garbage-${i}`));
    gw.gateway.load.judge(ON_TIME);
    expect(gw.gateway.abuse.isSuspect(address)).toBe(false);
  });
});
