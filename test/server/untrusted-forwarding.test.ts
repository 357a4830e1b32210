// Forwarding headers from a peer not in server.trustedProxies: ignored as
// before, but now said: one warning per peer naming the setting, a metric per
// request, never the header's value in the log; over HTTP/1.1, h2c and
// WebSocket upgrades alike. Real gateways on loopback (127.0.0.1 is the
// peer); the bounds on a flood of addresses with the class itself and a
// clock of the test's own.
import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:http2';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { compileClientAddress, type AddressedRequest } from '../../src/http/client-address.js';
import { ADDRESS_FAILURES } from '../../src/limits/login-throttle.js';
import { UntrustedForwarding } from '../../src/server/untrusted-forwarding.js';
import { postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { h2Request } from '../helpers/h2-client.js';
import type { LogEntry } from '../helpers/log-sink.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

const METRIC = 'gatehouse_untrusted_forwarded_headers_total';
/** A client-chosen value: it must never be believed, nor reach the log. */
const CLAIMED = '198.51.100.77';

async function counted(gw: TestGateway): Promise<number> {
  const text = await (await fetch(`${gw.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${METRIC} `));
  expect(line, `${METRIC} in /metrics`).toBeDefined();
  return Number(line!.split(' ')[1]);
}

function warnings(gw: TestGateway): LogEntry[] {
  return gw.logs.entries().filter((entry) => entry.setting === 'server.trustedProxies');
}

/** A WebSocket upgrade with these headers; resolves once the gateway answered it (a refusal: no route takes it). */
async function upgrade(url: string, headers: Record<string, string>): Promise<void> {
  const req = httpRequest(`${url}/no-route`, {
    agent: false,
    headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', ...headers },
  });
  req.end();
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  res.resume();
  await once(res, 'end');
}

describe('forwarding headers from a peer that is not a trusted proxy', () => {
  let upstream: Upstream;
  let gw: TestGateway;

  beforeAll(async () => {
    upstream = await startUpstream();
    gw = await startTestGateway({ config: { routes: [{ name: 'public', prefix: '/public', upstreams: [upstream.url], auth: 'none' }] } });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('warn once per peer naming it and server.trustedProxies, count every request, and are not believed', async () => {
    expect(await counted(gw)).toBe(0);
    const first = await fetch(`${gw.url}/public/a`, { headers: { 'x-forwarded-for': CLAIMED } });
    expect(first.status).toBe(200);
    expect(warnings(gw)).toHaveLength(1);
    expect(warnings(gw)[0]).toMatchObject({ level: 40, peer: '127.0.0.1', header: 'X-Forwarded-For' });
    expect(warnings(gw)[0]!.msg).toContain('127.0.0.1 is not in server.trustedProxies');
    expect(await counted(gw)).toBe(1);
    // The upstream hears of the peer, not of the address the client claimed.
    expect(upstream.seen.at(-1)!.headers['x-forwarded-for']).toBe('127.0.0.1');

    // The second, to one of the gateway's own endpoints: counted, not warned again; throttling counts the peer.
    const keys: Array<{ prefix: string; key: string }> = [];
    const consume = RateLimiterMemory.prototype.consume;
    vi.spyOn(RateLimiterMemory.prototype, 'consume').mockImplementation(function (this: RateLimiterMemory, key, ...rest) {
      keys.push({ prefix: this.keyPrefix, key: String(key) });
      return consume.call(this, key, ...rest);
    });
    const refused = await postJson(`${gw.url}/api/v1/auth/login`, { username: 'alice', password: 'not-her-password' }, { 'x-forwarded-for': CLAIMED });
    expect(refused.status).toBe(401);
    expect(keys.filter((k) => k.prefix.endsWith(ADDRESS_FAILURES)).map((k) => k.key)).toEqual(['127.0.0.1']);
    expect(warnings(gw)).toHaveLength(1);
    expect(await counted(gw)).toBe(2);
    // Nothing the client wrote in the header reached the log, at any level.
    expect(gw.logs.text()).not.toContain(CLAIMED);
  });

  it('count `Forwarded` and WebSocket upgrades too; a request without either header is not counted', async () => {
    const before = await counted(gw);
    expect((await fetch(`${gw.url}/public/b`, { headers: { forwarded: `for=${CLAIMED}` } })).status).toBe(200);
    expect(await counted(gw)).toBe(before + 1);
    await upgrade(gw.url, { 'x-forwarded-for': CLAIMED });
    expect(await counted(gw)).toBe(before + 2);
    expect((await fetch(`${gw.url}/public/c`)).status).toBe(200);
    await upgrade(gw.url, {});
    expect(await counted(gw)).toBe(before + 2);
    expect(warnings(gw)).toHaveLength(1);
    expect(gw.logs.text()).not.toContain(CLAIMED);
  });
});

describe('forwarding headers over HTTP/2', () => {
  it('are warned about and counted as over HTTP/1.1', async () => {
    const upstream = await startUpstream();
    const gw = await startTestGateway({
      config: { server: { http2: { cleartext: true } }, routes: [{ name: 'public', prefix: '/public', upstreams: [upstream.url], auth: 'none' }] },
    });
    const session = connect(gw.url);
    session.on('error', () => undefined);
    try {
      await once(session, 'connect');
      expect((await h2Request(session, { ':method': 'GET', ':path': '/public/h2', 'x-forwarded-for': CLAIMED })).status).toBe(200);
      expect((await h2Request(session, { ':method': 'GET', ':path': '/public/h2' })).status).toBe(200);
      expect(warnings(gw)).toMatchObject([{ peer: '127.0.0.1', header: 'X-Forwarded-For' }]);
      expect(await counted(gw)).toBe(1);
    } finally {
      session.destroy();
      await gw.close();
      await upstream.close();
    }
  });
});

describe('forwarding headers from a trusted proxy', () => {
  it('are believed without a warning or a count', async () => {
    const upstream = await startUpstream();
    const gw = await startTestGateway({
      config: { server: { trustedProxies: ['loopback'] }, routes: [{ name: 'public', prefix: '/public', upstreams: [upstream.url], auth: 'none' }] },
    });
    try {
      expect((await fetch(`${gw.url}/public/a`, { headers: { 'x-forwarded-for': CLAIMED } })).status).toBe(200);
      await upgrade(gw.url, { forwarded: `for=${CLAIMED}` });
      expect(upstream.seen.at(-1)!.headers['x-forwarded-for']).toBe(`${CLAIMED}, 127.0.0.1`);
      expect(warnings(gw)).toEqual([]);
      expect(await counted(gw)).toBe(0);
    } finally {
      await gw.close();
      await upstream.close();
    }
  });
});

describe('a flood of peers', () => {
  function requestFrom(peer: string, headers: AddressedRequest['headers'] = { 'x-forwarded-for': CLAIMED }): AddressedRequest {
    return { socket: { remoteAddress: peer }, headers };
  }

  function notice(now: () => number) {
    const warn = vi.fn();
    const inc = vi.fn();
    const clientAddress = compileClientAddress(['10.0.0.0/8']);
    const forwarding = new UntrustedForwarding({ clientAddress, logger: { warn } as never, metrics: { untrustedForwardedHeaders: { inc } as never }, now });
    return { forwarding, warn, inc, clientAddress };
  }

  it('is warned a few lines a minute, and each peer once while it is remembered', () => {
    let now = 0;
    const { forwarding, warn, inc } = notice(() => now);
    for (let i = 0; i < 5000; i++) forwarding.note(requestFrom(`2001:db8::${i.toString(16)}`));
    expect(inc).toHaveBeenCalledTimes(5000);
    expect(warn).toHaveBeenCalledTimes(10);
    // The first ten were warned and are remembered: no second line for them, in a later minute either.
    now += 60_000;
    for (let i = 0; i < 10; i++) forwarding.note(requestFrom(`2001:db8::${i.toString(16)}`));
    expect(warn).toHaveBeenCalledTimes(10);
    // A peer not warned yet is, once the minute has passed.
    forwarding.note(requestFrom('2001:db8::ffff'));
    expect(warn).toHaveBeenCalledTimes(11);
    expect(warn.mock.calls.at(-1)![0]).toEqual({ peer: '2001:db8::ffff', header: 'X-Forwarded-For', setting: 'server.trustedProxies' });
  });

  it('costs a request without forwarding headers no trust check, and a trusted peer neither count nor line', () => {
    const { forwarding, warn, inc, clientAddress } = notice(() => 0);
    const trustsPeer = vi.spyOn(clientAddress, 'trustsPeer');
    forwarding.note(requestFrom('203.0.113.1', { host: 'example.test' }));
    expect(trustsPeer).not.toHaveBeenCalled();
    forwarding.note(requestFrom('10.1.2.3', { forwarded: `for=${CLAIMED}` }));
    expect(inc).not.toHaveBeenCalled();
    expect(warn).not.toHaveBeenCalled();
  });
});
