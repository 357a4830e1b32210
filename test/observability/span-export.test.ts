// Spans over OTLP/HTTP to a real HTTP server standing in for the collector:
// each request is one server span with the ids the gateway chose, so the span
// id the upstream was given as its parent is the one exported.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startOtlpCollector, type OtlpCollector } from '../helpers/otlp-collector.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}

let collector: OtlpCollector;
let upstream: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  collector = await startOtlpCollector();
  upstream = await startUpstream();
  gw = await startTestGateway({
    config: {
      tracing: { otlpEndpoint: `${collector.url}/v1/traces` },
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
    await gw.close();
    await collector.received('/v1/traces');
    const exported = collector
      .bodies<{ resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }> }>('/v1/traces')
      .flatMap((body) => body.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)));
    expect(collector.posts[0]).toMatchObject({ url: '/v1/traces', contentType: expect.stringContaining('json') });
    const proxied = exported.find((span) => span.name === 'GET orders');
    expect(proxied).toMatchObject({ traceId: clientTrace, spanId: upstreamParent, parentSpanId: '00f067aa0ba902b7' });
    const attributes = Object.fromEntries(proxied!.attributes.map((a) => [a.key, Object.values(a.value)[0]]));
    expect(attributes).toMatchObject({ 'http.route': 'orders', 'http.request.method': 'GET' });
    expect(Number(attributes['http.response.status_code'])).toBe(200);
    // The login was a span of its own, a root of a new trace.
    expect(exported.find((span) => span.name === 'POST /api/v1/auth/login')?.traceId).toMatch(/^[0-9a-f]{32}$/);
  });
});
