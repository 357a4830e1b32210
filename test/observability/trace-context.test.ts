// W3C Trace Context through the gateway: a valid traceparent is continued
// (same trace, the gateway's span as the upstream's parent), an absent or
// invalid one starts a trace; the trace id is in the request's log lines.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traceContext, upstreamTraceparent } from '../../src/observability/trace-context.js';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

describe('traceparent parsing', () => {
  it('starts traces whose ids never repeat, across refills of the random pool', () => {
    // 2,000 traces draw 48 KB of random bytes: a dozen refills of the 4 KB pool.
    const traces = Array.from({ length: 2000 }, () => traceContext(undefined));
    const ids = new Set(traces.flatMap((t) => [t.traceId, t.spanId]));
    expect(ids.size).toBe(4000);
    for (const t of traces) {
      expect(t.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(t.spanId).toMatch(/^[0-9a-f]{16}$/);
    }
  });

  it('continues a valid one and starts a trace for anything else', () => {
    const continued = traceContext(`00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`);
    expect(continued).toMatchObject({ traceId: CLIENT_TRACE, parentSpanId: CLIENT_SPAN, flags: '01' });
    expect(continued.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(upstreamTraceparent(continued)).toBe(`00-${CLIENT_TRACE}-${continued.spanId}-01`);
    // A later version may carry more fields: its first four are read.
    expect(traceContext(`01-${CLIENT_TRACE}-${CLIENT_SPAN}-00-extra`).traceId).toBe(CLIENT_TRACE);
    for (const invalid of [
      undefined,
      '',
      `ff-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
      `00-${'0'.repeat(32)}-${CLIENT_SPAN}-01`,
      `00-${CLIENT_TRACE}-${'0'.repeat(16)}-01`,
      `00-${CLIENT_TRACE.toUpperCase()}-${CLIENT_SPAN}-01`,
      `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01-extra`,
      'garbage',
    ]) {
      const started = traceContext(invalid);
      expect(started.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(started.traceId).not.toBe(CLIENT_TRACE);
      expect(started.parentSpanId).toBeUndefined();
    }
  });
});

describe('through the gateway', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  beforeAll(async () => {
    upstream = await startUpstream();
    gw = await startTestGateway({ config: { routes: [{ name: 'orders', prefix: '/orders', upstreams: [upstream.url] }] } });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it('passes the trace upstream with the gateway as parent, tracestate untouched, and logs its id', async () => {
    const { access_token } = await login(gw.url, 'alice', 'alice-password-1');
    const response = await fetch(`${gw.url}/orders/1`, {
      headers: {
        authorization: `Bearer ${access_token}`,
        traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
        tracestate: 'vendor=opaque',
        'x-request-id': 'traced-1',
      },
    });
    expect(response.status).toBe(200);
    const seen = upstream.seen.at(-1)!.headers;
    const [version, trace, parent, flags] = String(seen.traceparent).split('-');
    expect([version, trace, flags]).toEqual(['00', CLIENT_TRACE, '01']);
    expect(parent).toMatch(/^[0-9a-f]{16}$/);
    expect(parent).not.toBe(CLIENT_SPAN);
    expect(seen.tracestate).toBe('vendor=opaque');
    const line = await gw.logs.next((entry) => entry.reqId === 'traced-1' && entry.kind === 'proxy');
    expect(line.traceId).toBe(CLIENT_TRACE);
  });

  it('starts a trace when none comes, and the gateway endpoints log it too', async () => {
    const { access_token } = await login(gw.url, 'alice', 'alice-password-1');
    await (await fetch(`${gw.url}/orders/2`, { headers: { authorization: `Bearer ${access_token}`, 'x-request-id': 'traced-2' } })).arrayBuffer();
    const traceparent = String(upstream.seen.at(-1)!.headers.traceparent);
    expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const line = await gw.logs.next((entry) => entry.reqId === 'traced-2' && entry.kind === 'proxy');
    expect(traceparent.split('-')[1]).toBe(line.traceId);

    await fetch(`${gw.url}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, 'x-request-id': 'traced-3' },
      body: JSON.stringify({ username: 'alice', password: 'alice-password-1' }),
    });
    const lines = gw.logs.entries().filter((entry) => entry.reqId === 'traced-3' || entry.requestId === 'traced-3');
    expect(lines.length).toBeGreaterThanOrEqual(2); // the audit line and the access line
    for (const entry of lines) expect(entry.traceId).toBe(CLIENT_TRACE);
  });
});
