// CORS for browser applications, at the HTTP level: preflights answered by
// the gateway without credentials and never by a backend, permissions only
// for allowed origins, methods and headers, and the response headers a
// script may read exposed on every answer (errors included).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

const APP = 'https://app.example.com';
let upstream: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startUpstream();
  const cors = { allowedOrigins: [APP, 'https://*.tenants.example.com'], allowCredentials: true, maxAgeS: 300 };
  gw = await startTestGateway({
    config: {
      cors,
      routes: [
        { name: 'orders', prefix: '/orders', upstreams: [upstream.url], cors: { ...cors, allowedMethods: ['GET', 'POST'] } },
        { name: 'plain', prefix: '/plain', upstreams: [upstream.url] },
      ],
    },
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

function preflight(path: string, origin: string, method: string, headers = 'authorization, content-type'): Promise<Response> {
  return fetch(`${gw.url}${path}`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });
}

describe('preflights', () => {
  it('are answered by the gateway, without credentials, for its endpoints and for a route, never by the backend', async () => {
    for (const [path, method] of [
      ['/api/v1/auth/login', 'POST'],
      ['/orders/7', 'GET'],
      ['/api/v1/requests/0b6f1c2a-3d4e-4f50-8a61-000000000001/status', 'GET'],
    ] as const) {
      const response = await preflight(path, APP, method);
      expect(response.status, path).toBe(204);
      expect(response.headers.get('access-control-allow-origin')).toBe(APP);
      expect(response.headers.get('access-control-allow-methods')).toContain(method);
      expect(response.headers.get('access-control-allow-headers')).toBe('authorization, content-type');
      expect(response.headers.get('access-control-allow-credentials')).toBe('true');
      expect(response.headers.get('access-control-max-age')).toBe('300');
      expect(response.headers.get('vary')).toContain('Origin');
    }
    expect(upstream.seen).toEqual([]);
  });

  it('grant nothing to an origin, method or header that is not allowed', async () => {
    for (const response of [
      await preflight('/orders/7', 'https://evil.example.net', 'GET'),
      await preflight('/orders/7', 'https://tenants.example.com', 'GET'), // the pattern needs a subdomain
      await preflight('/orders/7', APP, 'DELETE'),
      await preflight('/orders/7', APP, 'GET', 'authorization, x-secret'),
    ]) {
      expect(response.status).toBe(204);
      expect(response.headers.get('access-control-allow-origin')).toBeNull();
      expect(response.headers.get('access-control-allow-methods')).toBeNull();
    }
    const tenant = await preflight('/orders/7', 'https://acme.tenants.example.com', 'GET');
    expect(tenant.headers.get('access-control-allow-origin')).toBe('https://acme.tenants.example.com');
    expect(upstream.seen).toEqual([]);
  });

  it('on a route without CORS, go on as any request (the bearer check refuses it)', async () => {
    const response = await preflight('/plain/x', APP, 'GET');
    expect(response.status).toBe(401);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('actual requests', () => {
  it('carry the origin, the exposed headers and Vary on answers and errors alike; other origins get none', async () => {
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    const proxied = await fetch(`${gw.url}/orders/7`, { headers: { origin: APP, authorization: `Bearer ${tokens.access_token}` } });
    expect(proxied.status).toBe(200);
    expect(proxied.headers.get('access-control-allow-origin')).toBe(APP);
    expect(proxied.headers.get('access-control-expose-headers')).toBe('location, retry-after, x-request-id');
    expect(proxied.headers.get('vary')).toContain('Origin');
    await proxied.arrayBuffer();

    const refused = await fetch(`${gw.url}/orders/7`, { headers: { origin: APP } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(APP);
    await refused.arrayBuffer();

    const loginAnswer = await fetch(`${gw.url}/api/v1/auth/login`, {
      method: 'POST',
      headers: { origin: APP, 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'alice', password: 'wrong-password' }),
    });
    expect(loginAnswer.status).toBe(401);
    expect(loginAnswer.headers.get('access-control-allow-origin')).toBe(APP);
    await loginAnswer.arrayBuffer();

    const foreign = await fetch(`${gw.url}/orders/7`, { headers: { origin: 'https://evil.example.net', authorization: `Bearer ${tokens.access_token}` } });
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
    await foreign.arrayBuffer();
  });
});
