// A path that a route serves, asked with a method no route there takes: 405
// with the methods that are taken in `Allow` and a `$diagnoses` body, not 404.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

let upstream: Upstream;
let gw: TestGateway;
let auth: Record<string, string>;

beforeAll(async () => {
  upstream = await startUpstream();
  gw = await startTestGateway({
    config: {
      routes: [
        { name: 'orders-read', prefix: '/orders', methods: ['GET'], upstreams: [upstream.url] },
        { name: 'orders-write', prefix: '/orders', methods: ['POST', 'DELETE'], upstreams: [upstream.url] },
        { name: 'reports', prefix: '/reports', methods: ['GET'], upstreams: [upstream.url] },
        { name: 'anything', prefix: '/files', upstreams: [upstream.url] },
      ],
    },
  });
  auth = { authorization: `Bearer ${(await login(gw.url, 'alice', 'alice-password-1')).access_token}` };
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

describe('405 Method Not Allowed', () => {
  it('names every method the routes at that path take, HEAD with GET', async () => {
    const response = await fetch(`${gw.url}/orders/7`, { method: 'PUT', headers: auth, body: 'x' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('DELETE, GET, HEAD, POST');
    const body = (await response.json()) as { $diagnoses: Array<{ $detail: string }> };
    expect(body.$diagnoses[0]!.$detail).toMatch(/^405 \(Method Not Allowed\)/);

    const reports = await fetch(`${gw.url}/reports`, { method: 'DELETE', headers: auth });
    expect(reports.status).toBe(405);
    expect(reports.headers.get('allow')).toBe('GET, HEAD');
    await reports.arrayBuffer();
  });

  it('still answers 404 where no route serves the path, and proxies what a route takes', async () => {
    const none = await fetch(`${gw.url}/nowhere`, { method: 'PUT', headers: auth });
    expect(none.status).toBe(404);
    expect(none.headers.get('allow')).toBeNull();
    await none.arrayBuffer();
    for (const [path, method] of [
      ['/orders/7', 'DELETE'],
      ['/orders/7', 'GET'],
      ['/files/a', 'PATCH'],
    ] as const) {
      const response = await fetch(`${gw.url}${path}`, { method, headers: auth });
      expect(response.status, `${method} ${path}`).toBe(200);
      await response.arrayBuffer();
    }
    expect(upstream.seen.map((r) => r.method)).toEqual(['DELETE', 'GET', 'PATCH']);
  });
});
