// /metrics after real traffic: every family an operator's dashboard uses is
// there by name and label, with bounded label values (route names, never
// raw paths), and process metrics under their conventional names.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { freePort } from '../helpers/ports.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

let upstream: Upstream;
let gw: TestGateway;
let text: string;

/** The value of one sample, by its name and exact labels as exposed. */
function sample(name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const wanted = Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`));
    if (wanted) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

beforeAll(async () => {
  upstream = await startUpstream();
  const deadPort = await freePort();
  gw = await startTestGateway({
    config: {
      routes: [
        { name: 'orders', prefix: '/orders', upstreams: [upstream.url] },
        { name: 'gone', prefix: '/gone', upstreams: [`http://127.0.0.1:${deadPort}`] },
      ],
    },
  });
  const { access_token } = await login(gw.url, 'alice', 'alice-password-1');
  const auth = { authorization: `Bearer ${access_token}` };
  for (const path of ['/orders/1', '/orders/2?x=1', '/orders/3']) await (await fetch(`${gw.url}${path}`, { headers: auth })).arrayBuffer();
  await (await fetch(`${gw.url}/orders/4`, { method: 'POST', headers: auth, body: 'x' })).arrayBuffer();
  await (await fetch(`${gw.url}/orders/5`)).arrayBuffer(); // no token
  await (await fetch(`${gw.url}/orders/6`, { headers: { authorization: 'Bearer abcd.efgh.ijkl' } })).arrayBuffer();
  await (await fetch(`${gw.url}/gone/1`, { headers: auth })).arrayBuffer();
  await (await fetch(`${gw.url}/nowhere/1`, { headers: auth })).arrayBuffer();
  await (
    await fetch(`${gw.url}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"username":"alice","password":"wrong"}',
    })
  ).arrayBuffer();
  // Access lines and metrics are written as each response closes: scrape once the last one has.
  await gw.logs.next((entry) => entry.kind === 'gateway' && entry.status === 401);
  text = await (await fetch(`${gw.adminUrl}/metrics`)).text();
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

describe('request metrics', () => {
  it('count requests by route name, method and status, with durations', () => {
    expect(sample('gatehouse_http_request_duration_seconds_count', { route: 'orders', method: 'GET', status: '200' })).toBe(3);
    expect(sample('gatehouse_http_request_duration_seconds_count', { route: 'orders', method: 'POST', status: '200' })).toBe(1);
    expect(sample('gatehouse_http_request_duration_seconds_count', { route: 'orders', method: 'GET', status: '401' })).toBe(2);
    expect(sample('gatehouse_http_request_duration_seconds_count', { route: 'gone', method: 'GET', status: '502' })).toBe(1);
    expect(sample('gatehouse_http_request_duration_seconds_count', { route: 'unmatched', method: 'GET', status: '404' })).toBe(1);
    expect(sample('gatehouse_http_request_duration_seconds_count', { route: '/api/v1/auth/login', method: 'POST', status: '401' })).toBe(1);
    // Sub-millisecond buckets exist to resolve the gateway's own overhead.
    expect(sample('gatehouse_http_request_duration_seconds_bucket', { route: 'orders', method: 'GET', status: '200', le: '0.0005' })).toBeDefined();
    // Never a raw path as a label.
    expect(text).not.toMatch(/route="\/orders\/\d/);
  });

  it('time upstreams and count their failures by kind', () => {
    expect(sample('gatehouse_upstream_duration_seconds_count', { route: 'orders' })).toBe(4);
    expect(sample('gatehouse_upstream_failures_total', { route: 'gone', kind: 'refused' })).toBe(1);
  });

  it('count bearer refusals by reason and token-cache hits and misses', () => {
    expect(sample('gatehouse_auth_refusals_total', { reason: 'no bearer token' })).toBe(1);
    expect(sample('gatehouse_auth_refusals_total', { reason: 'malformed token' })).toBe(1);
    expect(sample('gatehouse_token_cache_lookups_total', { result: 'miss' })).toBeGreaterThanOrEqual(1);
    expect(sample('gatehouse_token_cache_lookups_total', { result: 'hit' })).toBeGreaterThanOrEqual(3);
  });

  it('count logins by method and outcome', () => {
    expect(sample('gatehouse_login_events_total', { method: 'password', outcome: 'success' })).toBe(1);
    expect(sample('gatehouse_login_events_total', { method: 'password', outcome: 'failure' })).toBe(1);
  });
});

describe('live gauges, store and build', () => {
  it('read tunnels, long polls, the outbox and the store at scrape time', () => {
    expect(sample('gatehouse_websocket_tunnels')).toBe(0);
    expect(sample('gatehouse_long_polls')).toBe(0);
    expect(sample('gatehouse_outbox_records')).toBe(0);
    expect(sample('gatehouse_store_up')).toBe(1);
    expect(sample('gatehouse_store_command_duration_seconds_count', { operation: 'createSession', outcome: 'ok' })).toBe(1);
    expect(sample('gatehouse_store_command_duration_seconds_count', { operation: 'getSession', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
  });

  it('names the build and uses the conventional process metric names', () => {
    expect(sample('gatehouse_build_info', { version: '0.1.0', node: process.version })).toBe(1);
    expect(sample('process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
    expect(text).not.toContain('gatehouse_process_');
    expect(text).not.toContain('gatehouse_nodejs_');
  });
});
