// Spans over OTLP/HTTP to a real HTTP server standing in for the collector:
// each request is one server span with the ids the gateway chose, so the span
// id the upstream was given as its parent is the one exported.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}

let collector: Server;
const exported: OtlpSpan[] = [];
const posts: Array<{ url: string; contentType: string }> = [];
let upstream: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts.push({ url: req.url ?? '', contentType: String(req.headers['content-type']) });
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
      };
      for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) exported.push(...ss.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      collector.emit('spans');
    });
  });
  collector.listen(0, '127.0.0.1');
  await once(collector, 'listening');
  const { port } = collector.address() as AddressInfo;
  upstream = await startUpstream();
  gw = await startTestGateway({
    config: {
      tracing: { otlpEndpoint: `http://127.0.0.1:${port}/v1/traces` },
      routes: [{ name: 'orders', prefix: '/orders', upstreams: [upstream.url] }],
    },
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
  collector?.close();
});

describe('span export', () => {
  it('exports a server span per request, parented as the upstream was told, when the gateway stops', async () => {
    const clientTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const { access_token } = await login(gw.url, 'alice', 'alice-password-1');
    const response = await fetch(`${gw.url}/orders/1`, {
      headers: { authorization: `Bearer ${access_token}`, traceparent: `00-${clientTrace}-00f067aa0ba902b7-01` },
    });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    const upstreamParent = String(upstream.seen.at(-1)!.headers.traceparent).split('-')[2];

    // Closing flushes the batch.
    const received = once(collector, 'spans');
    await gw.close();
    await received;
    expect(posts[0]).toMatchObject({ url: '/v1/traces', contentType: expect.stringContaining('json') });
    const proxied = exported.find((span) => span.name === 'GET orders');
    expect(proxied).toMatchObject({ traceId: clientTrace, spanId: upstreamParent, parentSpanId: '00f067aa0ba902b7' });
    const attributes = Object.fromEntries(proxied!.attributes.map((a) => [a.key, Object.values(a.value)[0]]));
    expect(attributes).toMatchObject({ 'http.route': 'orders', 'http.request.method': 'GET' });
    expect(Number(attributes['http.response.status_code'])).toBe(200);
    // The login was a span of its own, a root of a new trace.
    expect(exported.find((span) => span.name === 'POST /api/v1/auth/login')?.traceId).toMatch(/^[0-9a-f]{32}$/);
  });
});
