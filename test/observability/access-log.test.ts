// The access log: one line per request at info, with what an operator needs to
// trace it; `log.access: false` drops those lines and nothing else.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/ports.js';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

let upstream: Upstream;
let deadPort: number;
beforeAll(async () => {
  upstream = await startUpstream();
  deadPort = await freePort(); // nothing listens there: the route's target is down
});
afterAll(async () => {
  await upstream.close();
});

async function gatewayWith(access: boolean | undefined): Promise<TestGateway> {
  return startTestGateway({
    config: {
      log: { level: 'info', ...(access === undefined ? {} : { access }) },
      routes: [
        { prefix: '/api/orders', upstreams: [upstream.url] },
        { prefix: '/gone', upstreams: [`http://127.0.0.1:${deadPort}`] },
      ],
    },
  });
}

const messages = (gw: TestGateway) => gw.logs.entries().map((entry) => entry.msg);

describe('by default', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await gatewayWith(undefined);
  });
  afterAll(async () => gw.close());

  it('writes one line per proxied request, naming route, upstream, caller and outcome', async () => {
    const { access_token } = await login(gw.url, 'alice', 'alice-password-1');
    const response = await fetch(`${gw.url}/api/orders/7?page=2`, {
      headers: { authorization: `Bearer ${access_token}`, 'x-request-id': 'trace-me-1', 'user-agent': 'access-test/1.0' },
    });
    expect(response.status).toBe(200);
    // Written when the response closes, which may come just after the client has it all.
    const line = await gw.logs.next((entry) => entry.kind === 'proxy' && entry.reqId === 'trace-me-1');
    expect(gw.logs.entries().filter((entry) => entry.reqId === 'trace-me-1')).toHaveLength(1);
    expect(line).toMatchObject({
      level: 30,
      msg: 'request',
      kind: 'proxy',
      address: '127.0.0.1',
      method: 'GET',
      url: '/api/orders/7?page=2',
      status: 200,
      route: '/api/orders',
      upstream: upstream.url,
      bytesIn: 0,
      userAgent: 'access-test/1.0',
      completed: true,
    });
    expect(line.sub).toEqual(expect.any(String));
    expect(line.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(line.durationMs).toEqual(expect.any(Number));
    expect(line.upstreamMs).toEqual(expect.any(Number));
    expect(line.bytesOut).toBeGreaterThan(0);
    expect(line.time).toEqual(expect.any(Number));
  });

  it("writes a line of the same shape for the gateway's own endpoints, with the route pattern, never the raw path", async () => {
    await login(gw.url, 'alice', 'alice-password-1');
    const line = await gw.logs.next((entry) => entry.kind === 'gateway' && entry.route === '/api/v1/auth/login');
    expect(line).toMatchObject({ msg: 'request', method: 'POST', url: '/api/v1/auth/login', status: 200, address: '127.0.0.1', completed: true });
    expect(line.bytesIn).toBeGreaterThan(0);
    expect(line.traceId).toMatch(/^[0-9a-f]{32}$/);
    await fetch(`${gw.url}/api/v1/requests/9b2f4f2e-1111-4222-8333-444455556666/status`);
    const status = await gw.logs.next((entry) => entry.kind === 'gateway' && entry.route === '/api/v1/requests/*');
    expect(status.url).toBe('/api/v1/requests/9b2f4f2e-1111-4222-8333-444455556666/status');
  });
});

describe('with log.access: false', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await gatewayWith(false);
  });
  afterAll(async () => gw.close());

  it('writes no per-request line, and still logs what goes wrong', async () => {
    const { access_token } = await login(gw.url, 'alice', 'alice-password-1');
    const headers = { authorization: `Bearer ${access_token}` };
    expect((await fetch(`${gw.url}/api/orders/7`, { headers })).status).toBe(200);
    expect((await fetch(`${gw.url}/gone/1`, { headers })).status).toBe(502);
    await gw.logs.next((entry) => entry.msg === 'upstream target marked down');
    expect(messages(gw)).not.toContain('request');
    // Logins are events, not access lines: they stay.
    expect(messages(gw)).toContain('session started');
  });
});
