// Chromium over HTTP/2 through the TLS listener: a page served by a backend,
// a login from the page's script, a proxied call with the bearer token, and a
// response streamed to the page chunk by chunk; every one of them over h2 as
// the browser's own Resource Timing reports it.
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { makeTlsPair } from '../helpers/tls-pair.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

const PAGE = '<!doctype html><title>h2</title><p>served through the gateway</p>';

function backend(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  if (req.url === '/app/') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(PAGE);
    return;
  }
  if (req.url === '/app/stream') {
    // Three chunks, the next one only once the previous has been written: a streamed body, not a buffered one.
    res.writeHead(200, { 'content-type': 'text/plain' });
    let left = 3;
    const next = () => {
      if (left === 0) return void res.end();
      left -= 1;
      res.write(`chunk${3 - left};`, () => setImmediate(next));
    };
    next();
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ url: req.url, subject: req.headers['x-gatehouse-subject'] ?? null }));
}

describe('Chromium over h2', () => {
  let dir: string;
  let up: Upstream;
  let gw: TestGateway;
  let browser: TestBrowser;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-browser-h2-'));
    const pair = makeTlsPair(dir, 'gateway', 0x6001);
    up = await startUpstream(backend);
    gw = await startTestGateway({
      config: {
        server: { tls: { certFile: pair.certFile, keyFile: pair.keyFile } },
        routes: [
          { name: 'page', prefix: '/app/', upstreams: [up.url], auth: 'none', methods: ['GET'] },
          { name: 'api', prefix: '/api/things', upstreams: [up.url] },
        ],
      },
    });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await gw?.close();
    await up?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('loads the page, logs in, calls the API and reads a stream, all on h2', async () => {
    // The test's self-signed certificate: the browser is told to accept it, and negotiates as with any other.
    const context = await browser.browser.newContext({ ignoreHTTPSErrors: true });
    try {
      const page = await context.newPage();
      const origin = gw.url.replace('127.0.0.1', 'localhost');
      const response = await page.goto(`${origin}/app/`);
      expect(response?.status()).toBe(200);
      const result = await page.evaluate(async () => {
        const login = await fetch('/api/v1/auth/login', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: 'alice', password: 'alice-password-1' }),
        });
        const { access_token: token } = (await login.json()) as { access_token: string };
        const api = await (await fetch('/api/things/7', { headers: { authorization: `Bearer ${token}` } })).json();
        const reader = (await fetch('/app/stream')).body!.getReader();
        const chunks: string[] = [];
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          chunks.push(new TextDecoder().decode(value));
        }
        // The browser's Resource Timing (the DOM's types are not this project's).
        const timing = performance as unknown as { getEntriesByType(type: string): Array<{ nextHopProtocol: string }> };
        const entries = [...timing.getEntriesByType('navigation'), ...timing.getEntriesByType('resource')];
        return {
          loginStatus: login.status,
          api: api as { url: string; subject: string | null },
          streamed: chunks.join(''),
          protocols: entries.map((entry) => entry.nextHopProtocol),
        };
      });
      expect(result.loginStatus).toBe(200);
      expect(result.api).toMatchObject({ url: '/api/things/7' });
      expect(result.api.subject).not.toBeNull();
      expect(result.streamed).toBe('chunk1;chunk2;chunk3;');
      // The page, the login, the API call, the stream (and whatever else the browser fetched, its favicon).
      expect(result.protocols.length).toBeGreaterThanOrEqual(4);
      expect(new Set(result.protocols)).toEqual(new Set(['h2']));
    } finally {
      await context.close();
    }
  });
});
