// The abuse guard's bounds are config (limits.abuse), not constants: a gateway
// configured with lower bounds holds and refuses at them, where the defaults
// (20 strikes to hold, 200 to refuse) would still answer plain 401s.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

let upstream: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startUpstream();
  gw = await startTestGateway({
    config: {
      server: { trustedProxies: ['127.0.0.1'] },
      limits: { abuse: { holdAfterStrikes: 2, refuseAfterStrikes: 4, refuseForMs: 60_000, holdMs: 0 } },
      routes: [{ name: 'orders', prefix: '/orders', upstreams: [upstream.url] }],
    },
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

const get = (address: string, token: string) => fetch(`${gw.url}/orders/1`, { headers: { 'x-forwarded-for': address, authorization: `Bearer ${token}` } });

describe('abuse bounds from the config', () => {
  it('limits.abuse: the 2nd refused token of an address is held, and from the 4th strike it is refused from the head for refuseForMs', async () => {
    const prober = '192.0.2.90';
    const held: string[] = [];
    gw.gateway.abuse.on('held', (address) => held.push(address));
    expect((await get(prober, 'garbage-1')).status).toBe(401);
    expect(held).toEqual([]);
    expect((await get(prober, 'garbage-2')).status).toBe(401);
    expect(held).toEqual([prober]);
    expect((await get(prober, 'garbage-3')).status).toBe(401);
    expect((await get(prober, 'garbage-4')).status).toBe(401);
    const refused = await get(prober, 'garbage-5');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('60');
    // Another address is untouched.
    expect((await get('192.0.2.91', 'garbage')).status).toBe(401);
  });
});
