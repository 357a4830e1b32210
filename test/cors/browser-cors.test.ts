// CORS in a real browser (headless Chromium): a page from one origin logs in
// at the gateway on another origin, calls a proxied route, starts an
// asynchronous request and polls its status there; a page from an origin that
// is not allowed cannot read any answer.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

let browser: TestBrowser;
let upstream: Upstream;
let gw: TestGateway;
const pages: Server[] = [];

/** A server for an empty page: it only gives the browser an origin to run scripts from. */
async function pageOrigin(): Promise<string> {
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title>'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  pages.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let allowed: string;
let other: string;

beforeAll(async () => {
  [allowed, other] = [await pageOrigin(), await pageOrigin()];
  upstream = await startUpstream((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'POST') {
        res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ requestId: '7d0c1f4e-2b3a-4c5d-8e6f-7a8b9c0d1e2f' }));
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ user: req.headers['x-gatehouse-username'] }));
      }
    });
  });
  const cors = { allowedOrigins: [allowed] };
  gw = await startTestGateway({ config: { cors, routes: [{ name: 'orders', prefix: '/orders', upstreams: [upstream.url], cors }] } });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await upstream?.close();
  for (const server of pages) server.close();
});

describe('a browser application on another origin', () => {
  it('logs in, calls a route, starts a request and polls its status', async () => {
    const page = await browser.browser.newPage();
    await page.goto(allowed);
    const result = await page.evaluate(async (gateway) => {
      const json = { 'content-type': 'application/json' };
      const login = await fetch(`${gateway}/api/v1/auth/login`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ username: 'alice', password: 'alice-password-1' }),
      });
      const { access_token: token } = (await login.json()) as { access_token: string };
      const auth = { authorization: `Bearer ${token}` };
      const orders = await fetch(`${gateway}/orders/7`, { headers: auth });
      const job = await fetch(`${gateway}/orders/jobs`, { method: 'POST', headers: { ...auth, ...json }, body: '{}' });
      const { requestId } = (await job.json()) as { requestId: string };
      const status = await fetch(`${gateway}/api/v1/requests/${requestId}/status`, { headers: auth });
      return {
        login: login.status,
        orders: [orders.status, await orders.json()],
        job: [job.status, job.headers.get('location'), job.headers.get('retry-after'), job.headers.get('x-request-id') !== null],
        status: [status.status, ((await status.json()) as { status: string }).status],
      };
    }, gw.url);
    expect(result).toEqual({
      login: 200,
      orders: [200, { user: 'alice' }],
      job: [202, '/api/v1/requests/7d0c1f4e-2b3a-4c5d-8e6f-7a8b9c0d1e2f/status', expect.any(String), true],
      status: [200, 'pending'],
    });
    await page.close();
  });

  it('is refused from an origin that is not allowed: the script reads nothing', async () => {
    const page = await browser.browser.newPage();
    await page.goto(other);
    const outcome = await page.evaluate(async (gateway) => {
      try {
        const response = await fetch(`${gateway}/api/v1/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: 'alice', password: 'alice-password-1' }),
        });
        return `read ${response.status}`;
      } catch (error) {
        return `refused: ${(error as Error).name}`;
      }
    }, gw.url);
    expect(outcome).toBe('refused: TypeError');
    await page.close();
  });
});
