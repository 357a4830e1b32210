// The proxy end to end: operator routes, bearer checks on every request,
// identity headers to the backend, real upstream servers on port 0.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jwtPayload, login, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/raw-http.js';
import { startUpstream, type EchoBody, type Upstream } from '../helpers/upstream.js';

let orders: Upstream;
let users: Upstream;
let publicSite: Upstream;
let gw: TestGateway;
let tokens: TokenSetBody;

beforeAll(async () => {
  [orders, users, publicSite] = await Promise.all([startUpstream(), startUpstream(), startUpstream()]);
  gw = await startTestGateway({
    config: {
      routes: [
        { name: 'orders', prefix: '/api/v1/orders', upstreams: [orders.url] },
        { name: 'order-items', prefix: '/api/v1/orders/items', upstreams: [users.url], rewritePrefix: '/items' },
        { name: 'users-read', prefix: '/api/v1/users', methods: ['GET'], upstreams: [users.url], forwardAuthorization: true },
        { name: 'public', prefix: '/public', upstreams: [publicSite.url], auth: 'none' },
        { name: 'internal-host', prefix: '/', host: 'internal.example', upstreams: [users.url] },
      ],
    },
  });
  tokens = await login(gw.url, 'alice', 'alice-password-1');
});
afterAll(async () => {
  await gw.close();
  await Promise.all([orders.close(), users.close(), publicSite.close()]);
});

const bearer = (token = tokens.access_token) => ({ authorization: `Bearer ${token}` });

async function echoed(response: Response): Promise<EchoBody> {
  expect(response.status).toBe(200);
  return (await response.json()) as EchoBody;
}

describe('routing', () => {
  it("forwards to the route's upstream with path and query unchanged", async () => {
    const body = await echoed(await fetch(`${gw.url}/api/v1/orders/7?expand=items&x=a%2Fb`, { headers: bearer() }));
    expect(body.url).toBe('/api/v1/orders/7?expand=items&x=a%2Fb');
    expect(body.method).toBe('GET');
  });

  it('lets the longest prefix win and applies its rewrite', async () => {
    const body = await echoed(await fetch(`${gw.url}/api/v1/orders/items/3`, { headers: bearer() }));
    expect(body.url).toBe('/items/3');
  });

  it('matches on segment boundaries only', async () => {
    const response = await fetch(`${gw.url}/api/v1/ordersX`, { headers: bearer() });
    expect(response.status).toBe(404);
    const diagnostics = (await response.json()) as { $diagnoses: Array<{ $detail: string }> };
    expect(diagnostics.$diagnoses[0]!.$detail).toBe('404 (Not Found) - not_found: no route matches the request');
  });

  it("honours a route's methods", async () => {
    expect((await fetch(`${gw.url}/api/v1/users/1`, { headers: bearer() })).status).toBe(200);
    const refused = await fetch(`${gw.url}/api/v1/users/1`, { method: 'DELETE', headers: bearer() });
    expect(refused.status).toBe(405);
    expect(refused.headers.get('allow')).toBe('GET, HEAD');
  });

  it("honours a route's host", async () => {
    const auth = `authorization: Bearer ${tokens.access_token}`;
    const elsewhere = await rawRequest(gw.url, ['GET /anything HTTP/1.1', auth]);
    expect(elsewhere.status).toBe(404); // Host is 127.0.0.1, not internal.example
    const viaHost = await rawRequest(gw.url, ['GET /anything HTTP/1.1', auth, 'host: Internal.Example:8080']);
    expect(viaHost.status).toBe(200);
    expect((JSON.parse(viaHost.body) as EchoBody).url).toBe('/anything');
  });

  it('streams request bodies to the upstream', async () => {
    const body = await echoed(
      await fetch(`${gw.url}/api/v1/orders`, { method: 'POST', headers: { ...bearer(), 'content-type': 'application/json' }, body: '{"item":42}' }),
    );
    expect(body).toMatchObject({ method: 'POST', body: '{"item":42}' });
  });
});

describe('bearer checks', () => {
  it('accepts an access token and tells the backend who called', async () => {
    const body = await echoed(await fetch(`${gw.url}/api/v1/orders/1`, { headers: bearer() }));
    const claims = jwtPayload(tokens.access_token);
    expect(body.headers).toMatchObject({
      'x-gatehouse-subject': claims.sub,
      'x-gatehouse-username': 'alice',
      'x-gatehouse-session': claims.sid,
      'x-gatehouse-token-type': 'access',
      'x-gatehouse-auth-method': 'password',
    });
    expect(body.headers.authorization).toBeUndefined();
  });

  it('accepts a refresh token as a bearer token (spec 5.9)', async () => {
    const body = await echoed(await fetch(`${gw.url}/api/v1/orders/1`, { headers: bearer(tokens.refresh_token) }));
    expect(body.headers['x-gatehouse-token-type']).toBe('refresh');
  });

  it('tells the backend an API-key login apart', async () => {
    const viaKey = await login(gw.url, 'alice', gw.apiKeys.alice![0]!);
    const body = await echoed(await fetch(`${gw.url}/api/v1/orders/1`, { headers: bearer(viaKey.access_token) }));
    expect(body.headers['x-gatehouse-auth-method']).toBe('api_key');
  });

  it('forwards the Authorization header only where the route asks for it', async () => {
    const body = await echoed(await fetch(`${gw.url}/api/v1/users/1`, { headers: bearer() }));
    expect(body.headers.authorization).toBe(`Bearer ${tokens.access_token}`);
  });

  it.each([
    ['no Authorization header', {}, 'Bearer realm="gatehouse"'],
    ['a Basic Authorization header', { authorization: 'Basic YWxpY2U6eA==' }, /^Bearer realm="gatehouse", error="invalid_token"/],
    ['a garbage token', { authorization: 'Bearer abc.def.ghi' }, /^Bearer realm="gatehouse", error="invalid_token"/],
    [
      'an unsigned token',
      { authorization: `Bearer ${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"sub":"x"}').toString('base64url')}.` },
      /error="invalid_token"/,
    ],
  ])('refuses %s with 401 and never forwards it', async (_case, headers, challenge) => {
    const before = orders.seen.length;
    const response = await fetch(`${gw.url}/api/v1/orders/1`, { headers });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(challenge);
    const diagnostics = (await response.json()) as { $diagnoses: Array<{ $severity: string; $detail: string }> };
    expect(diagnostics.$diagnoses[0]).toMatchObject({ $severity: 'error', $detail: expect.stringMatching(/^401 \(Unauthorized\) - invalid_token: /) });
    expect(orders.seen.length).toBe(before);
  });

  it('lets public routes through without a token, and strips identity headers there too', async () => {
    const body = await echoed(await fetch(`${gw.url}/public/page`, { headers: { 'x-gatehouse-subject': 'admin' } }));
    expect(body.headers['x-gatehouse-subject']).toBeUndefined();
  });

  it("stops a logged-out session's tokens at once, refresh token included", async () => {
    const session = await login(gw.url, 'bob', 'bob-password-1');
    expect((await fetch(`${gw.url}/api/v1/orders/1`, { headers: bearer(session.access_token) })).status).toBe(200);
    expect((await fetch(`${gw.url}/api/v1/orders/1`, { headers: bearer(session.refresh_token) })).status).toBe(200);
    const out = await fetch(`${gw.url}/api/v1/auth/logout`, { method: 'POST', headers: bearer(session.access_token) });
    expect(out.status).toBe(204);
    expect((await fetch(`${gw.url}/api/v1/orders/1`, { headers: bearer(session.access_token) })).status).toBe(401);
    expect((await fetch(`${gw.url}/api/v1/orders/1`, { headers: bearer(session.refresh_token) })).status).toBe(401);
  });
});

describe('request ids', () => {
  it('forwards a sane client X-Request-Id and returns it', async () => {
    const response = await fetch(`${gw.url}/api/v1/orders/1`, { headers: { ...bearer(), 'x-request-id': 'trace-42' } });
    expect(response.headers.get('x-request-id')).toBe('trace-42');
    expect((await echoed(response)).headers['x-request-id']).toBe('trace-42');
  });

  it('generates one when absent, and logs it with the request', async () => {
    const response = await fetch(`${gw.url}/api/v1/orders/2`, { headers: bearer() });
    const id = response.headers.get('x-request-id')!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await echoed(response)).headers['x-request-id']).toBe(id);
    // The access line is written when the response closes, which may come just after the client has it all.
    expect(await gw.logs.next((e) => e.reqId === id && e.kind === 'proxy')).toMatchObject({ status: 200 });
  });

  it('never logs the bearer token', () => {
    expect(gw.logs.text()).not.toContain(tokens.access_token);
    expect(gw.logs.text()).not.toContain(tokens.refresh_token.split('.')[2]!);
  });
});

describe("the gateway's own paths", () => {
  it('are not reachable through dot segments into the proxy', async () => {
    const response = await rawRequest(gw.url, ['POST /public/../api/v1/auth/login HTTP/1.1']);
    expect([400, 404]).toContain(response.status);
    expect(publicSite.seen.some((r) => r.url.includes('auth'))).toBe(false);
  });
});
