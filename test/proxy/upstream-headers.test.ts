// The header policy against every spoofing trick we know, one test each. Requests
// are real: raw bytes on a socket into a node:http server, so header names such
// as `x_gatehouse_subject` or `X.Gatehouse.Subject` reach Node exactly as sent.
import { once } from 'node:events';
import {
  Agent,
  createServer,
  request as httpRequest,
  type ClientRequest,
  validateHeaderValue,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect as netConnect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/core/principal.js';
import type { IdentityHeaderNames } from '../../src/config/schema.js';
import { compileClientAddress } from '../../src/http/client-address.js';
import { HeaderPolicy, type RequestHeaderContext } from '../../src/proxy/upstream-headers.js';

const IDENTITY: IdentityHeaderNames = {
  subject: 'x-gatehouse-subject',
  username: 'x-gatehouse-username',
  session: 'x-gatehouse-session',
  tokenType: 'x-gatehouse-token-type',
  authMethod: 'x-gatehouse-auth-method',
  keyThumbprint: 'x-gatehouse-dpop-jkt',
  provider: 'x-gatehouse-provider',
  assertion: 'x-gatehouse-assertion',
};

const ALICE: Principal = {
  sub: 'u-0f3a9c',
  username: 'alice',
  sid: 's-71d2',
  tokenType: 'Bearer',
  method: 'pwd',
  expiresAtMs: Date.now() + 600_000,
  sessionEndsAtMs: Date.now() + 3_600_000,
  roles: [],
  scopes: undefined,
  readOnly: false,
};

/** What the gateway sets for ALICE. */
const ALICE_HEADERS = {
  'x-gatehouse-subject': 'u-0f3a9c',
  'x-gatehouse-username': 'alice',
  'x-gatehouse-session': 's-71d2',
  'x-gatehouse-token-type': 'access',
  'x-gatehouse-auth-method': 'password',
};

/** Peers in these tests are 127.0.0.1: not in 10/8, in loopback. */
const NO_PROXIES = compileClientAddress([]);
const untrustedPeer = compileClientAddress(['10.0.0.0/8']);
const trustedPeer = compileClientAddress(['10.0.0.0/8', 'loopback']);
const untrusted = new HeaderPolicy({ identityHeaders: IDENTITY, clientAddress: untrustedPeer });
const trusted = new HeaderPolicy({ identityHeaders: IDENTITY, clientAddress: trustedPeer });

function context(overrides: Partial<RequestHeaderContext> = {}): RequestHeaderContext {
  return { forwardAuthorization: false, principal: ALICE, requestId: 'gw-req-1', host: 'gw.example', ...overrides };
}

/** Every header whose name a backend could read as an `x-gatehouse-*` one. */
function gatehouseHeaders(headers: OutgoingHttpHeaders): Record<string, unknown> {
  const found: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase().replace(/[_.]/g, '-').startsWith('x-gatehouse-')) found[name] = value;
  }
  return found;
}

/** Every header whose name a backend could read as a forwarding one. */
function forwardingHeaders(headers: OutgoingHttpHeaders): Record<string, unknown> {
  const found: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers)) {
    const canonical = name.toLowerCase().replace(/[_.]/g, '-');
    if (canonical === 'forwarded' || canonical === 'x-real-ip' || canonical.startsWith('x-forwarded-')) found[name] = value;
  }
  return found;
}

// ---- real requests ------------------------------------------------------------

const PSK = Buffer.from('67617465686f7573652d746573742d70736b2d6b6579', 'hex');
const PSK_CIPHER = 'PSK-AES128-GCM-SHA256';

let server: Server;
/** Accepts Content-Length beside Transfer-Encoding, as `insecureHTTPParser` would let through. */
let laxServer: Server;
let tlsServer: Server;
/** Requests waiting for their test, by the client socket's local port. */
const arrivals = new Map<number, (req: IncomingMessage) => void>();
const openResponses = new Set<ServerResponse>();
const clientSockets = new Set<Socket>();

function onRequest(req: IncomingMessage, res: ServerResponse): void {
  openResponses.add(res);
  arrivals.get(req.socket.remotePort ?? -1)?.(req);
}

beforeAll(async () => {
  server = createServer(onRequest);
  laxServer = createServer({ insecureHTTPParser: true }, onRequest);
  // PSK: TLS without a certificate to ship in the repository.
  tlsServer = createHttpsServer({ ciphers: PSK_CIPHER, maxVersion: 'TLSv1.2', pskCallback: () => PSK }, onRequest);
  await Promise.all([server, laxServer, tlsServer].map((s) => once(s.listen(0, '127.0.0.1'), 'listening')));
});

afterEach(() => {
  for (const res of openResponses) res.end();
  openResponses.clear();
  for (const socket of clientSockets) socket.destroy();
  clientSockets.clear();
  arrivals.clear();
});

afterAll(async () => {
  await Promise.all(
    [server, laxServer, tlsServer].map((s) => {
      s.closeAllConnections();
      return new Promise((r) => s.close(r));
    }),
  );
});

interface Send {
  method?: string;
  body?: string;
  tls?: boolean;
  lax?: boolean;
}

/** Sends a request as raw bytes (after `Host: gw.example`) and resolves with the server's IncomingMessage. */
async function arrive(headerLines: string[], { method = 'GET', body = '', tls = false, lax = false }: Send = {}): Promise<IncomingMessage> {
  const socket: Socket = tls
    ? tlsConnect({
        port: (tlsServer.address() as AddressInfo).port,
        host: '127.0.0.1',
        ciphers: PSK_CIPHER,
        maxVersion: 'TLSv1.2',
        checkServerIdentity: () => undefined,
        pskCallback: () => ({ psk: PSK, identity: 'test' }),
      })
    : netConnect(((lax ? laxServer : server).address() as AddressInfo).port, '127.0.0.1');
  clientSockets.add(socket);
  socket.on('error', () => {});
  await once(socket, tls ? 'secureConnect' : 'connect');
  const arrived = new Promise<IncomingMessage>((resolve) => arrivals.set(socket.localPort!, resolve));
  socket.write([`${method} /x HTTP/1.1`, 'Host: gw.example', ...headerLines, '', ''].join('\r\n') + body);
  return arrived;
}

/** Sends `req` (and its body) on to a real upstream with `headers`, as the engine does; returns what the upstream got. */
async function forwardOnce(req: IncomingMessage, headers: OutgoingHttpHeaders): Promise<Array<{ url: string; body: string }>> {
  const seen: Array<{ url: string; body: string }> = [];
  const upstream = createServer((upReq, upRes) => {
    const entry = { url: upReq.url ?? '', body: '' };
    seen.push(entry);
    upReq.setEncoding('utf8');
    upReq.on('data', (chunk: string) => (entry.body += chunk));
    upReq.on('end', () => upRes.end('ok'));
  });
  await once(upstream.listen(0, '127.0.0.1'), 'listening');
  // One kept-alive connection, as the engine's pool keeps one per request in flight.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const to = { host: '127.0.0.1', port: (upstream.address() as AddressInfo).port, agent };
  const exchange = async (outgoing: ClientRequest) => {
    const [response] = (await once(outgoing, 'response')) as [IncomingMessage];
    response.resume();
    await once(response, 'end');
  };
  try {
    const outgoing = httpRequest({ ...to, method: req.method, path: req.url, headers });
    req.pipe(outgoing);
    await exchange(outgoing);
    // One more request on the same connection: the upstream reads requests in
    // order, so anything smuggled after the first has been seen once this one is answered.
    const sentinel = httpRequest({ ...to, path: '/sentinel' });
    sentinel.end();
    await exchange(sentinel);
    expect(sentinel.reusedSocket).toBe(true);
    return seen.filter((entry) => entry.url !== '/sentinel');
  } finally {
    agent.destroy();
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
  }
}

/** A real upstream response carrying exactly `headerLines`. */
async function upstreamResponse(headerLines: string[], body = '0\r\n\r\n'): Promise<IncomingMessage> {
  const raw = createNetServer((socket) => {
    socket.once('data', () => socket.end(['HTTP/1.1 200 OK', ...headerLines, '', ''].join('\r\n') + body));
  });
  await once(raw.listen(0, '127.0.0.1'), 'listening');
  try {
    const outgoing = httpRequest({ host: '127.0.0.1', port: (raw.address() as AddressInfo).port, path: '/', agent: false });
    outgoing.end();
    const [response] = (await once(outgoing, 'response')) as [IncomingMessage];
    response.resume();
    return response;
  } finally {
    raw.close();
  }
}

// ---- identity headers -----------------------------------------------------------

describe('identity headers', () => {
  it('identity header in exact case', async () => {
    const req = await arrive(['X-Gatehouse-Subject: admin']);
    expect(req.headers['x-gatehouse-subject']).toBe('admin');
    const out = untrusted.requestHeaders(req, context());
    expect(gatehouseHeaders(out)).toEqual(ALICE_HEADERS);
  });

  it('identity header in upper case', async () => {
    const req = await arrive(['X-GATEHOUSE-SUBJECT: admin', 'X-GATEHOUSE-USERNAME: root']);
    expect(req.headers['x-gatehouse-subject']).toBe('admin');
    const out = untrusted.requestHeaders(req, context());
    expect(gatehouseHeaders(out)).toEqual(ALICE_HEADERS);
  });

  it('identity header with underscores', async () => {
    const req = await arrive(['x_gatehouse_subject: admin', 'X_Gatehouse_Username: root', 'x_gatehouse_token_type: access']);
    expect(req.headers['x_gatehouse_subject']).toBe('admin');
    expect(req.headers['x_gatehouse_username']).toBe('root');
    const out = untrusted.requestHeaders(req, context());
    expect(gatehouseHeaders(out)).toEqual(ALICE_HEADERS);
  });

  it('identity header with dots', async () => {
    const req = await arrive(['X.Gatehouse.Subject: admin', 'x.gatehouse.session: stolen']);
    expect(req.headers['x.gatehouse.subject']).toBe('admin');
    expect(req.headers['x.gatehouse.session']).toBe('stolen');
    const out = untrusted.requestHeaders(req, context());
    expect(gatehouseHeaders(out)).toEqual(ALICE_HEADERS);
  });

  it('identity header mixing case, dashes, underscores and dots', async () => {
    const req = await arrive(['X-GATEHOUSE_SUBJECT: admin', 'x.Gatehouse_Auth-Method: password', 'X_gatehouse.TOKEN-type: access']);
    expect(req.headers['x-gatehouse_subject']).toBe('admin');
    expect(req.headers['x.gatehouse_auth-method']).toBe('password');
    expect(req.headers['x_gatehouse.token-type']).toBe('access');
    const out = untrusted.requestHeaders(req, context());
    expect(gatehouseHeaders(out)).toEqual(ALICE_HEADERS);
  });

  it('identity header on duplicated header lines', async () => {
    const req = await arrive([
      'X-Gatehouse-Subject: admin',
      'X-Gatehouse-Subject: root',
      'x-gatehouse-subject: u-0f3a9c',
      'x_gatehouse_subject: admin',
      'x_gatehouse_subject: root',
    ]);
    expect(req.headers['x-gatehouse-subject']).toBe('admin, root, u-0f3a9c');
    expect(req.headers['x_gatehouse_subject']).toBe('admin, root');
    const out = untrusted.requestHeaders(req, context());
    expect(gatehouseHeaders(out)).toEqual(ALICE_HEADERS);
    expect(out['x-gatehouse-subject']).toBe('u-0f3a9c'); // one value, not a list with the client's in it
  });

  it('identity headers sent to an `auth: none` route (no principal) are still removed', async () => {
    const req = await arrive([
      'X-Gatehouse-Subject: admin',
      'x_gatehouse_username: root',
      'X.Gatehouse.Session: stolen',
      'X-GATEHOUSE-TOKEN-TYPE: access',
      'x-gatehouse_auth.method: password',
    ]);
    expect(Object.keys(gatehouseHeaders(req.headers))).toHaveLength(5);
    const out = untrusted.requestHeaders(req, context({ principal: null }));
    expect(gatehouseHeaders(out)).toEqual({});
  });

  it('identity header names configured in mixed case are matched and set in lower case', async () => {
    const policy = new HeaderPolicy({
      identityHeaders: {
        subject: 'X-Auth-Subject',
        username: 'X-Auth-User',
        session: 'X-Auth-Session',
        tokenType: 'X-Auth-Token-Type',
        authMethod: 'X-Auth-Method',
        keyThumbprint: 'X-Auth-Key-Thumbprint',
        provider: 'X-Auth-Provider',
        assertion: 'X-Auth-Assertion',
      },
      clientAddress: NO_PROXIES,
    });
    const req = await arrive(['x_auth_user: root', 'X.AUTH.SUBJECT: admin']);
    const out = policy.requestHeaders(req, context());
    expect(out).not.toHaveProperty('x_auth_user');
    expect(out).not.toHaveProperty('x.auth.subject');
    expect(out['x-auth-subject']).toBe('u-0f3a9c');
    expect(out['x-auth-user']).toBe('alice');
  });

  it('token type and auth method name a refresh token and an API key login', async () => {
    const req = await arrive([]);
    const out = untrusted.requestHeaders(req, context({ principal: { ...ALICE, tokenType: 'Refresh', method: 'api_key' } }));
    expect(out['x-gatehouse-token-type']).toBe('refresh');
    expect(out['x-gatehouse-auth-method']).toBe('api_key');
  });

  it('a username with characters outside visible ASCII is made header-safe', async () => {
    const req = await arrive([]);
    const out = untrusted.requestHeaders(req, context({ principal: { ...ALICE, username: 'al ice\r\nX-Gatehouse-Subject: root\u00e9\u2028\t' } }));
    expect(out['x-gatehouse-username']).toBe('aliceX-Gatehouse-Subject:root');
    expect(() => validateHeaderValue('x-gatehouse-username', out['x-gatehouse-username'] as string)).not.toThrow();
    expect(out['x-gatehouse-subject']).toBe('u-0f3a9c');
  });
});

// ---- X-Forwarded-* and Forwarded ---------------------------------------------------

describe('forwarding headers', () => {
  it('X-Forwarded-For from an untrusted client is replaced by the peer address', async () => {
    const req = await arrive(['X-Forwarded-For: 10.1.2.3', 'X-Forwarded-For: 203.0.113.9']);
    expect(req.headers['x-forwarded-for']).toBe('10.1.2.3, 203.0.113.9');
    const out = untrusted.requestHeaders(req, context());
    expect(out['x-forwarded-for']).toBe('127.0.0.1');
    // The client address (limits, logs) is the same reading.
    expect(untrustedPeer.of(req)).toBe('127.0.0.1');
  });

  it('X-Forwarded-For from a trusted proxy is appended to', async () => {
    const req = await arrive(['X-Forwarded-For: 198.51.100.4', 'X-Forwarded-For: 10.0.0.7']);
    const out = trusted.requestHeaders(req, context());
    expect(out['x-forwarded-for']).toBe('198.51.100.4, 10.0.0.7, 127.0.0.1');
    // For limits and logs: walked back past the trusted hops (10.0.0.7, 127.0.0.1) to the client.
    expect(trustedPeer.of(req)).toBe('198.51.100.4');
  });

  it('X-Forwarded-Host and X-Forwarded-Proto spoofed by an untrusted client are replaced', async () => {
    const req = await arrive(['X-Forwarded-Host: admin.internal', 'X-Forwarded-Proto: https']);
    const out = untrusted.requestHeaders(req, context());
    expect(out['x-forwarded-host']).toBe('gw.example');
    expect(out['x-forwarded-proto']).toBe('http');
  });

  it('X-Forwarded-Host and X-Forwarded-Proto from a trusted proxy are kept', async () => {
    const req = await arrive(['X-Forwarded-Host: www.example.com', 'X-Forwarded-Proto: https']);
    const out = trusted.requestHeaders(req, context());
    expect(out['x-forwarded-host']).toBe('www.example.com');
    expect(out['x-forwarded-proto']).toBe('https');
  });

  it('a trusted proxy that sent no forwarding headers gets this hop’s', async () => {
    const req = await arrive([]);
    const out = trusted.requestHeaders(req, context());
    expect(forwardingHeaders(out)).toEqual({ 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'http', 'x-forwarded-host': 'gw.example' });
  });

  it('X-Forwarded-Proto spoofed as http on a TLS connection becomes https', async () => {
    const req = await arrive(['X-Forwarded-Proto: http'], { tls: true });
    expect(req.headers['x-forwarded-proto']).toBe('http');
    const out = untrusted.requestHeaders(req, context());
    expect(out['x-forwarded-proto']).toBe('https');
  });

  it('Forwarded spoofed by an untrusted client is removed', async () => {
    const req = await arrive(['Forwarded: for=10.0.0.1;proto=https;host=admin.internal', 'forwarded: for=unknown']);
    const out = untrusted.requestHeaders(req, context());
    expect(out).not.toHaveProperty('forwarded');
    expect(forwardingHeaders(out)).toEqual({ 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'http', 'x-forwarded-host': 'gw.example' });
  });

  it('Forwarded from a trusted proxy is kept and appended to', async () => {
    const req = await arrive(['Forwarded: for=198.51.100.4;proto=https', 'Forwarded: for="[2001:db8::1]"']);
    const out = trusted.requestHeaders(req, context());
    expect(out['forwarded']).toBe('for=198.51.100.4;proto=https, for="[2001:db8::1]", for=127.0.0.1;host="gw.example";proto=http');
  });

  it('x_forwarded_for and other `_`/`.` variants from an untrusted client are removed', async () => {
    const req = await arrive(['x_forwarded_for: 10.9.9.9', 'X.Forwarded.Host: admin.internal', 'X_FORWARDED_PROTO: https', 'x_real_ip: 10.9.9.9']);
    expect(req.headers['x_forwarded_for']).toBe('10.9.9.9');
    const out = untrusted.requestHeaders(req, context());
    expect(forwardingHeaders(out)).toEqual({ 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'http', 'x-forwarded-host': 'gw.example' });
  });

  it('x_forwarded_for variant is removed even from a trusted proxy (only the proper names are believed)', async () => {
    const req = await arrive(['x_forwarded_for: 10.9.9.9', 'X-Forwarded-For: 198.51.100.4']);
    const out = trusted.requestHeaders(req, context());
    expect(forwardingHeaders(out)).toEqual({
      'x-forwarded-for': '198.51.100.4, 127.0.0.1',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': 'gw.example',
    });
  });

  it('X-Forwarded-Port, X-Forwarded-Prefix and X-Real-IP from an untrusted client are removed', async () => {
    const req = await arrive(['X-Forwarded-Port: 443', 'X-Forwarded-Prefix: /admin', 'X-Real-IP: 10.0.0.1']);
    const out = untrusted.requestHeaders(req, context());
    expect(forwardingHeaders(out)).toEqual({ 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'http', 'x-forwarded-host': 'gw.example' });
  });

  it('X-Forwarded-Port, X-Forwarded-Prefix and X-Real-IP from a trusted proxy are kept', async () => {
    const req = await arrive(['X-Forwarded-Port: 443', 'X-Forwarded-Prefix: /app', 'X-Real-IP: 198.51.100.4']);
    const out = trusted.requestHeaders(req, context());
    expect(out['x-forwarded-port']).toBe('443');
    expect(out['x-forwarded-prefix']).toBe('/app');
    expect(out['x-real-ip']).toBe('198.51.100.4');
  });
});

// ---- Connection header tricks -------------------------------------------------------

describe('Connection header tricks', () => {
  it('Connection: x-gatehouse-subject neither smuggles a spoofed identity nor strips the gateway’s', async () => {
    const req = await arrive(['Connection: keep-alive, x-gatehouse-subject, X-Gatehouse-Username', 'X-Gatehouse-Subject: admin', 'x_gatehouse_subject: admin']);
    const out = untrusted.requestHeaders(req, context());
    expect(gatehouseHeaders(out)).toEqual(ALICE_HEADERS);
    const anonymous = untrusted.requestHeaders(req, context({ principal: null }));
    expect(gatehouseHeaders(anonymous)).toEqual({});
  });

  it('Connection: x-forwarded-for from an untrusted client cannot strip the gateway’s forwarding headers', async () => {
    const req = await arrive(['Connection: x-forwarded-for, x-forwarded-proto, x-forwarded-host, x-request-id']);
    const out = untrusted.requestHeaders(req, context());
    expect(forwardingHeaders(out)).toEqual({ 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'http', 'x-forwarded-host': 'gw.example' });
    expect(out['x-request-id']).toBe('gw-req-1');
  });

  it('Connection: x-forwarded-for relayed by a trusted proxy cannot erase the chain it built', async () => {
    const req = await arrive([
      'Connection: close, X-Forwarded-For, Forwarded, X-Real-IP',
      'X-Forwarded-For: 198.51.100.4',
      'Forwarded: for=198.51.100.4',
      'X-Real-IP: 198.51.100.4',
    ]);
    const out = trusted.requestHeaders(req, context());
    expect(out['x-forwarded-for']).toBe('198.51.100.4, 127.0.0.1');
    expect(out['forwarded']).toBe('for=198.51.100.4, for=127.0.0.1;host="gw.example";proto=http');
    expect(out['x-real-ip']).toBe('198.51.100.4');
    expect(trustedPeer.of(req)).toBe('198.51.100.4');
  });

  it('Connection: content-length cannot send a GET body upstream unframed', async () => {
    const smuggled = 'GET /smuggled HTTP/1.1\r\nHost: gw.example\r\n\r\n';
    const req = await arrive(['Connection: content-length, host', `Content-Length: ${smuggled.length}`], { body: smuggled });
    const out = untrusted.requestHeaders(req, context());
    expect(out['content-length']).toBe(String(smuggled.length));
    expect(out['host']).toBe('gw.example');
    expect(await forwardOnce(req, out)).toEqual([{ url: '/x', body: smuggled }]);
  });

  it('headers named in Connection, and the hop-by-hop ones, are not forwarded', async () => {
    const req = await arrive([
      'Connection: keep-alive, X-Debug-Token, x-trace',
      'Keep-Alive: timeout=5',
      'Proxy-Connection: keep-alive',
      'TE: trailers',
      'Trailer: x-checksum',
      'Upgrade: h2c',
      'X-Debug-Token: abc',
      'X-Trace: 1',
      'X-Kept: yes',
      'Accept: application/json',
    ]);
    const out = untrusted.requestHeaders(req, context());
    for (const name of ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'x-debug-token', 'x-trace']) {
      expect(out, name).not.toHaveProperty(name);
    }
    expect(out['x-kept']).toBe('yes');
    expect(out['accept']).toBe('application/json');
  });
});

// ---- body framing -----------------------------------------------------------------------

describe('body framing', () => {
  it('a chunked GET body is re-framed for the upstream, not smuggled', async () => {
    const smuggled = 'GET /smuggled HTTP/1.1\r\nHost: gw.example\r\n\r\n';
    const chunked = `${smuggled.length.toString(16)}\r\n${smuggled}\r\n0\r\n\r\n`;
    const req = await arrive(['Transfer-Encoding: chunked'], { body: chunked });
    const out = untrusted.requestHeaders(req, context());
    expect(out['transfer-encoding']).toBe('chunked');
    expect(await forwardOnce(req, out)).toEqual([{ url: '/x', body: smuggled }]);
  });

  it('a chunked POST keeps its other transfer codings, with chunked once and last', async () => {
    const req = await arrive(['Transfer-Encoding: gzip, Chunked'], { method: 'POST', body: '0\r\n\r\n' });
    const out = untrusted.requestHeaders(req, context());
    expect(out['transfer-encoding']).toBe('gzip, chunked');
    expect(out).not.toHaveProperty('content-length');
  });

  it('Content-Length beside Transfer-Encoding (a lax parser) is dropped: chunked framing wins', async () => {
    const body = '5\r\nhello\r\n0\r\n\r\n';
    const req = await arrive(['Content-Length: 3', 'Transfer-Encoding: chunked'], { method: 'POST', body, lax: true });
    expect(req.headers['content-length']).toBe('3');
    const out = untrusted.requestHeaders(req, context());
    expect(out['transfer-encoding']).toBe('chunked');
    expect(out).not.toHaveProperty('content-length');
    expect(await forwardOnce(req, out)).toEqual([{ url: '/x', body: 'hello' }]);
  });
});

// ---- Authorization, Proxy-Authorization, X-Request-Id, Host ---------------------------------

describe('credentials and request id', () => {
  it('Authorization is not forwarded unless the route says so', async () => {
    const req = await arrive(['Authorization: Bearer eyJhbGciOi.secret.sig']);
    expect(untrusted.requestHeaders(req, context())).not.toHaveProperty('authorization');
    expect(untrusted.requestHeaders(req, context({ forwardAuthorization: true }))['authorization']).toBe('Bearer eyJhbGciOi.secret.sig');
  });

  it('Proxy-Authorization is never forwarded, even where Authorization is', async () => {
    const req = await arrive(['Proxy-Authorization: Basic Z2F0ZTpob3VzZQ==', 'Authorization: Bearer t']);
    const out = untrusted.requestHeaders(req, context({ forwardAuthorization: true }));
    expect(out).not.toHaveProperty('proxy-authorization');
    expect(out['authorization']).toBe('Bearer t');
  });

  it('a client X-Request-Id (and an x_request_id variant) is replaced by the gateway’s', async () => {
    const req = await arrive(['X-Request-Id: client-chosen', 'x_request_id: other']);
    const out = untrusted.requestHeaders(req, context({ requestId: 'gw-req-42' }));
    expect(out['x-request-id']).toBe('gw-req-42');
    expect(out).not.toHaveProperty('x_request_id');
  });

  it('Host is passed on unchanged (no changeOrigin)', async () => {
    const req = await arrive([]);
    const out = trusted.requestHeaders(req, context({ host: 'gw.example' }));
    expect(out['host']).toBe('gw.example');
  });

  it('leaves req.headers as it was', async () => {
    const req = await arrive(['X-Gatehouse-Subject: admin', 'X-Forwarded-For: 10.1.1.1', 'Authorization: Bearer t', 'Connection: x-a', 'X-A: 1']);
    const before = structuredClone({ ...req.headers });
    const out = untrusted.requestHeaders(req, context());
    expect({ ...req.headers }).toEqual(before);
    expect(out).not.toBe(req.headers);
  });
});

// ---- configuration ---------------------------------------------------------------------------

describe('configuration', () => {
  it('refuses an identity header name the gateway already handles', () => {
    for (const name of ['Authorization', 'X-Forwarded-For', 'X-Request-Id', 'Connection', 'Host']) {
      expect(() => new HeaderPolicy({ identityHeaders: { ...IDENTITY, username: name }, clientAddress: NO_PROXIES }), name).toThrow(/already handles/);
    }
  });

  it('refuses two identity headers with one name', () => {
    expect(() => new HeaderPolicy({ identityHeaders: { ...IDENTITY, username: 'X-Gatehouse-Subject' }, clientAddress: NO_PROXIES })).toThrow(/name of its own/);
  });
});

// ---- response side -------------------------------------------------------------------------------

describe('response headers', () => {
  it('hop-by-hop response headers are dropped', async () => {
    const response = await upstreamResponse([
      'Connection: keep-alive',
      'Keep-Alive: timeout=5, max=100',
      'Proxy-Connection: keep-alive',
      'Transfer-Encoding: chunked',
      'Trailer: x-checksum',
      'Upgrade: h2c',
      'Proxy-Authenticate: Basic realm="upstream"',
      'Content-Type: text/plain',
    ]);
    expect(response.headers['transfer-encoding']).toBe('chunked');
    expect(response.headers['proxy-authenticate']).toBe('Basic realm="upstream"');
    const out = untrusted.responseHeaders(response.headers);
    expect(out).toEqual({ 'content-type': 'text/plain' });
  });

  it('response headers named in the upstream’s Connection header are dropped', async () => {
    const response = await upstreamResponse(['Connection: close, X-Internal-Node', 'X-Internal-Node: pod-7', 'X-Public: yes', 'Content-Length: 0'], '');
    const out = untrusted.responseHeaders(response.headers);
    expect(out).toEqual({ 'x-public': 'yes', 'content-length': '0' });
  });

  it('keeps every Set-Cookie value and the end-to-end headers', async () => {
    const response = await upstreamResponse(
      [
        'Set-Cookie: a=1; Path=/; HttpOnly',
        'Set-Cookie: b=2; Path=/; Secure',
        'Set-Cookie: c=3',
        'WWW-Authenticate: Bearer realm="api"',
        'Cache-Control: no-store',
        'Content-Length: 0',
      ],
      '',
    );
    const upstream: IncomingHttpHeaders = response.headers;
    const before = structuredClone({ ...upstream });
    const out = untrusted.responseHeaders(upstream);
    expect(out['set-cookie']).toEqual(['a=1; Path=/; HttpOnly', 'b=2; Path=/; Secure', 'c=3']);
    expect(out['www-authenticate']).toBe('Bearer realm="api"');
    expect(out['cache-control']).toBe('no-store');
    expect(out['content-length']).toBe('0');
    expect({ ...upstream }).toEqual(before);
  });
});
