// The one client-address reading: the peer's address, X-Forwarded-For walked
// back through trusted proxies only, IPv4-mapped IPv6 unmapped. Requests are
// real: a node:http server on the dual-stack `::` sees an IPv4 client as
// `::ffff:127.0.0.1`, as a gateway listening on `::` does.
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { compileClientAddress, unmappedAddress, type ClientAddress } from '../../src/http/client-address.js';
import { limitConnections } from '../../src/limits/connection-limits.js';
import { withClientAddress } from '../../src/observability/logger.js';
import { ADDRESS_FAILURES } from '../../src/limits/login-throttle.js';
import { postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { logSink } from '../helpers/log-sink.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

let server: Server;
let port: number;
/** Each request's readings, by the reader under test. */
let readers: ClientAddress[] = [];
/** Also runs on each request, when set. */
let onRequest: ((req: IncomingMessage) => void) | undefined;

beforeAll(async () => {
  server = createServer((req, res) => {
    onRequest?.(req);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ raw: req.socket.remoteAddress, read: readers.map((reader) => reading(reader, req)) }));
  });
  server.listen(0, '::');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.close();
  await once(server, 'close');
});

function reading(reader: ClientAddress, req: IncomingMessage) {
  return { of: reader.of(req), peer: reader.peer(req.socket), trustsPeer: reader.trustsPeer(req.socket) };
}

/** A request from 127.0.0.1 with these X-Forwarded-For lines; the server's readings of it. */
async function from127(forwardedFor: string[], ...under: ClientAddress[]): Promise<{ raw: string; read: Array<ReturnType<typeof reading>> }> {
  readers = under;
  const req = httpRequest({ host: '127.0.0.1', port, path: '/', headers: forwardedFor.length > 0 ? { 'x-forwarded-for': forwardedFor } : {}, agent: false });
  req.end();
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  let body = '';
  for await (const chunk of res) body += String(chunk);
  return JSON.parse(body);
}

describe('IPv4-mapped IPv6 addresses', () => {
  it('are unmapped; other addresses are left as they are', () => {
    expect(unmappedAddress('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(unmappedAddress('::FFFF:10.0.0.1')).toBe('10.0.0.1');
    for (const address of ['10.0.0.1', '::1', '2001:db8::1', '::ffff:a00:1', '::ffff:', 'fe80::ffff:10.0.0.1', '']) {
      expect(unmappedAddress(address), address).toBe(address);
    }
  });

  it('a dual-stack socket’s IPv4 peer is read as the IPv4 address, by every reader', async () => {
    const { raw, read } = await from127([], compileClientAddress([]), compileClientAddress(['10.0.0.0/8']), compileClientAddress(['127.0.0.1']));
    expect(raw).toBe('::ffff:127.0.0.1');
    expect(read).toEqual([
      { of: '127.0.0.1', peer: '127.0.0.1', trustsPeer: false },
      { of: '127.0.0.1', peer: '127.0.0.1', trustsPeer: false },
      // A trusted proxy named in IPv4 is trusted when it arrives mapped; with no X-Forwarded-For it is the client.
      { of: '127.0.0.1', peer: '127.0.0.1', trustsPeer: true },
    ]);
  });

  it('a mapped address in X-Forwarded-For is unmapped too', async () => {
    const { read } = await from127(['::ffff:203.0.113.7'], compileClientAddress(['loopback']));
    expect(read[0]!.of).toBe('203.0.113.7');
  });
});

describe('trusted proxies', () => {
  it('X-Forwarded-For is walked back through trusted hops to the first untrusted one', async () => {
    const chain = compileClientAddress(['loopback', '10.0.0.0/8']);
    // The client claims 198.51.100.4; 203.0.113.7 is the first hop no trusted proxy vouches for.
    const { read } = await from127(['198.51.100.4, 203.0.113.7', '10.0.0.2'], chain);
    expect(read[0]).toEqual({ of: '203.0.113.7', peer: '127.0.0.1', trustsPeer: true });
    // Every hop trusted: the farthest one is the client.
    expect((await from127(['10.0.0.5, 10.0.0.2'], chain)).read[0]!.of).toBe('10.0.0.5');
    // A hop that is no address at all stops the walk like any untrusted one.
    expect((await from127(['198.51.100.4, not-an-address, 10.0.0.2'], chain)).read[0]!.of).toBe('not-an-address');
  });

  it('X-Forwarded-For from a peer that is not a trusted proxy is ignored: the peer is the client', async () => {
    const { read } = await from127(['203.0.113.7'], compileClientAddress([]), compileClientAddress(['10.0.0.0/8']));
    expect(read.map((r) => r.of)).toEqual(['127.0.0.1', '127.0.0.1']);
  });

  it('a request whose socket has gone has no address, and is no trusted proxy', () => {
    for (const reader of [compileClientAddress([]), compileClientAddress(['loopback', '10.0.0.0/8'])]) {
      const gone = { socket: { remoteAddress: undefined }, headers: { 'x-forwarded-for': '203.0.113.7' } };
      expect(reader.of(gone)).toBe('');
      expect(reader.of({ socket: null, headers: {} })).toBe('');
      expect(reader.peer(gone.socket)).toBeUndefined();
      expect(reader.trustsPeer(gone.socket)).toBe(false);
    }
  });

  it('refuses a trusted proxy entry it cannot read', () => {
    expect(() => compileClientAddress(['10.0.0.0/33'])).toThrow(/invalid range/);
    expect(() => compileClientAddress(['proxy.internal'])).toThrow(/invalid IP address/);
  });
});

describe('the logger', () => {
  it('logs a request’s client address as the reading gives it, and the unmapped peer without one', async () => {
    const logs = logSink('info');
    const gateway = withClientAddress(logs.logger, compileClientAddress(['loopback']));
    onRequest = (req) => {
      gateway.info({ req }, 'through the gateway’s reading');
      logs.logger.info({ req }, 'on its own');
    };
    try {
      await from127(['198.51.100.4, ::ffff:203.0.113.7']);
    } finally {
      onRequest = undefined;
    }
    const addresses = Object.fromEntries(logs.entries().map((entry) => [entry.msg, (entry.req as { remoteAddress?: string }).remoteAddress]));
    expect(addresses).toEqual({ 'through the gateway’s reading': '203.0.113.7', 'on its own': '127.0.0.1' });
  });
});

describe('connection caps', () => {
  /** A dual-stack server capped at one connection per address; whether a second connection from 127.0.0.1 stays open. */
  async function secondConnectionKept(clientAddress: ClientAddress | undefined): Promise<{ kept: boolean; refusedAddress: unknown }> {
    const capped = createServer();
    const logs = logSink('info');
    limitConnections(capped, { maxConnections: 100, maxConnectionsPerAddress: 1, ...(clientAddress && { clientAddress }) }, logs.logger);
    capped.listen(0, '::');
    await once(capped, 'listening');
    const open = async () => {
      const socket = connect({ host: '127.0.0.1', port: (capped.address() as AddressInfo).port });
      socket.on('error', () => {});
      await once(socket, 'connect');
      return socket;
    };
    const first = await open();
    const second = await open();
    // A refused socket is destroyed on accept; a kept one stays open until this wait ends.
    const kept = await Promise.race([once(second, 'close').then(() => false), new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 200))]);
    first.destroy();
    second.destroy();
    capped.closeAllConnections();
    capped.close();
    const refusal = logs.entries().find((entry) => entry.event === 'connection_refused');
    return { kept, refusedAddress: refusal?.address };
  }

  it('count a dual-stack peer under its unmapped address, and exempt it when it is a trusted proxy', async () => {
    expect(await secondConnectionKept(undefined)).toEqual({ kept: false, refusedAddress: '127.0.0.1' });
    expect(await secondConnectionKept(compileClientAddress(['10.0.0.0/8']))).toEqual({ kept: false, refusedAddress: '127.0.0.1' });
    expect(await secondConnectionKept(compileClientAddress(['127.0.0.1']))).toEqual({ kept: true, refusedAddress: undefined });
  });
});

describe('one client, one key', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let base: string;
  /** Every key the memory limiters counted, with the limiter's key prefix. */
  let counted: Array<{ prefix: string; key: string }>;

  beforeAll(async () => {
    upstream = await startUpstream();
    gw = await startTestGateway({
      config: {
        // Dual-stack: an IPv4 client's socket address is `::ffff:127.0.0.1`.
        server: { host: '::', trustedProxies: ['loopback'] },
        routes: [{ name: 'public', prefix: '/public', upstreams: [upstream.url], auth: 'none', rateLimit: { points: 100, durationS: 60 } }],
      },
    });
    base = `http://127.0.0.1:${new URL(gw.url).port}`;
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });
  beforeEach(() => {
    const consume = RateLimiterMemory.prototype.consume;
    vi.spyOn(RateLimiterMemory.prototype, 'consume').mockImplementation(function (this: RateLimiterMemory, key, ...rest) {
      counted.push({ prefix: this.keyPrefix, key: String(key) });
      return consume.call(this, key, ...rest);
    });
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** The address a failed login counted against, and the one a public route's limit counted, for one client. */
  async function keysOf(headers: Record<string, string>): Promise<{ login: string[]; route: string[] }> {
    counted = [];
    expect((await postJson(`${base}/api/v1/auth/login`, { username: 'alice', password: 'not-her-password' }, headers)).status).toBe(401);
    expect((await fetch(`${base}/public/x`, { headers })).status).toBe(200);
    return {
      login: counted.filter((c) => c.prefix.endsWith(ADDRESS_FAILURES)).map((c) => c.key),
      route: counted.filter((c) => c.prefix.endsWith('route:public')).map((c) => c.key),
    };
  }

  it('login throttling and route limits count a direct client and a proxied one under the same address, as the logs name it', async () => {
    // Straight from 127.0.0.1 (the socket says ::ffff:127.0.0.1).
    expect(await keysOf({})).toEqual({ login: ['127.0.0.1'], route: ['address:127.0.0.1'] });
    // Through the trusted proxy on loopback, which names the client in its mapped spelling.
    expect(await keysOf({ 'x-forwarded-for': '::ffff:203.0.113.50' })).toEqual({ login: ['203.0.113.50'], route: ['address:203.0.113.50'] });

    const lines = gw.logs.entries();
    const audit = lines.filter((entry) => entry.event === 'audit').map((entry) => entry.address);
    expect(audit).toEqual(['127.0.0.1', '203.0.113.50']);
    const access = lines
      .filter((entry) => entry.msg === 'request' && typeof entry.url === 'string' && entry.url.startsWith('/public'))
      .map((entry) => entry.address);
    expect(access).toEqual(['127.0.0.1', '203.0.113.50']);
  });
});
