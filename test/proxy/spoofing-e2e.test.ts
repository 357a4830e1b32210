// Header spoofing end to end: requests written byte for byte on a socket, a
// real gateway, and real upstreams that report exactly what they received.
// One test per trick; each asserts what reached the upstream.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jwtPayload, login, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { rawExchange } from '../helpers/raw-exchange.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

interface Received {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  trailers: Record<string, string | undefined>;
  body: string;
}

/** Echoes what it received, trailers included. */
function report(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const received: Received = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      trailers: req.trailers,
      body: Buffer.concat(chunks).toString('utf8'),
    };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(received));
  });
}

const IDENTITY = ['x-gatehouse-subject', 'x-gatehouse-username', 'x-gatehouse-session', 'x-gatehouse-token-type', 'x-gatehouse-auth-method'];
/** How backends that fold `_` and `.` into `-` read a header name. */
const folded = (name: string) => name.toLowerCase().replaceAll('_', '-').replaceAll('.', '-');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let api: Upstream;
let open: Upstream;
let gw: TestGateway;
let tokens: TokenSetBody;
let auth: string;
let hostLine: string;

beforeAll(async () => {
  [api, open] = await Promise.all([startUpstream(report), startUpstream(report)]);
  gw = await startTestGateway({
    config: {
      routes: [
        { name: 'api', prefix: '/api', upstreams: [api.url] },
        { name: 'public', prefix: '/public', upstreams: [open.url], auth: 'none' },
      ],
    },
  });
  tokens = await login(gw.url, 'alice', 'alice-password-1');
  auth = `authorization: Bearer ${tokens.access_token}`;
  hostLine = `${new URL(gw.url).host}`;
});
afterAll(async () => {
  await gw.close();
  await Promise.all([api.close(), open.close()]);
});

function received(response: RawResponse): Received {
  expect(response.status).toBe(200);
  return JSON.parse(response.body) as Received;
}

/** The identity the gateway must have told the upstream, and nothing else under any identity name. */
function expectGatewayIdentity(headers: Received['headers']): void {
  const claims = jwtPayload(tokens.access_token);
  expect({
    subject: headers['x-gatehouse-subject'],
    username: headers['x-gatehouse-username'],
    session: headers['x-gatehouse-session'],
    tokenType: headers['x-gatehouse-token-type'],
    authMethod: headers['x-gatehouse-auth-method'],
  }).toEqual({ subject: claims.sub, username: 'alice', session: claims.sid, tokenType: 'access', authMethod: 'password' });
  const spelt = Object.keys(headers).filter((name) => IDENTITY.includes(folded(name)));
  expect(spelt.sort()).toEqual([...IDENTITY].sort());
}

function expectNoIdentity(headers: Received['headers']): void {
  expect(Object.keys(headers).filter((name) => IDENTITY.includes(folded(name)))).toEqual([]);
}

describe('identity headers sent by the client', () => {
  const spellings: Array<[string, (name: string) => string]> = [
    ['lower case', (n) => n],
    ['upper case', (n) => n.toUpperCase()],
    ['mixed case', (n) => n.replace(/(^|-)(\w)/g, (m) => m.toUpperCase())],
    ['underscores', (n) => n.replaceAll('-', '_')],
    ['dots', (n) => n.replaceAll('-', '.')],
    ['mixed separators', (n) => n.replace('-', '_').replace('-', '.')],
    ['upper case with underscores', (n) => n.replaceAll('-', '_').toUpperCase()],
  ];
  const forged = (spell: (name: string) => string) => IDENTITY.map((name) => `${spell(name)}: forged-${name}`);

  it.each(spellings)("in %s are replaced by the gateway's on a protected route", async (_case, spell) => {
    const got = received(await rawRequest(gw.url, ['GET /api/whoami HTTP/1.1', auth, ...forged(spell)]));
    expectGatewayIdentity(got.headers);
    expect(JSON.stringify(got.headers)).not.toContain('forged');
  });

  it.each(spellings)('in %s are removed on a public route', async (_case, spell) => {
    const got = received(await rawRequest(gw.url, ['GET /public/page HTTP/1.1', ...forged(spell)]));
    expectNoIdentity(got.headers);
    expect(JSON.stringify(got.headers)).not.toContain('forged');
  });

  it('sent twice, in two spellings each, are all replaced', async () => {
    const lines = IDENTITY.flatMap((name) => [`${name}: forged-1`, `${name.toUpperCase()}: forged-2`, `${name.replaceAll('-', '_')}: forged-3`]);
    const got = received(await rawRequest(gw.url, ['GET /api/twice HTTP/1.1', auth, ...lines]));
    expectGatewayIdentity(got.headers);
    expect(JSON.stringify(got.headers)).not.toContain('forged');
  });

  it("in a chunked request's trailers never reach the upstream", async () => {
    const response = await rawExchange(
      gw.url,
      ['POST /api/upload HTTP/1.1', `host: ${hostLine}`, auth, 'transfer-encoding: chunked', 'trailer: x-gatehouse-subject', 'connection: close'],
      '5\r\nhello\r\n0\r\nx-gatehouse-subject: forged\r\nx_gatehouse_username: forged\r\n\r\n',
    );
    const got = received(response);
    expect(got.body).toBe('hello');
    expectGatewayIdentity(got.headers);
    expect(got.trailers).toEqual({});
    expect(JSON.stringify(got)).not.toContain('forged');
  });
});

describe('forwarding headers from an untrusted client', () => {
  it.each([
    ['X-Forwarded-For', 'x-forwarded-for: 6.6.6.6', { 'x-forwarded-for': '127.0.0.1' }],
    ['X-Forwarded-For, a chain', 'X-Forwarded-For: 6.6.6.6, 10.0.0.1', { 'x-forwarded-for': '127.0.0.1' }],
    ['X-Forwarded-Host', 'x-forwarded-host: evil.example', { 'x-forwarded-host': '$HOST' }],
    ['X-Forwarded-Proto', 'x-forwarded-proto: https', { 'x-forwarded-proto': 'http' }],
    ['Forwarded', 'forwarded: for=6.6.6.6;proto=https;host=evil.example', { forwarded: undefined }],
    ['X-Real-IP', 'x-real-ip: 6.6.6.6', { 'x-real-ip': undefined }],
    ['X-Forwarded-Port', 'x-forwarded-port: 443', { 'x-forwarded-port': undefined }],
    ['X-Forwarded-Prefix', 'x-forwarded-prefix: /admin', { 'x-forwarded-prefix': undefined }],
    ['X_Forwarded_For', 'X_Forwarded_For: 6.6.6.6', { x_forwarded_for: undefined, 'x-forwarded-for': '127.0.0.1' }],
    ['x.forwarded.host', 'x.forwarded.host: evil.example', { 'x.forwarded.host': undefined, 'x-forwarded-host': '$HOST' }],
  ])('%s is replaced or removed', async (_case, line, expected) => {
    const got = received(await rawRequest(gw.url, ['GET /api/where HTTP/1.1', auth, line]));
    const want = Object.fromEntries(Object.entries(expected).map(([name, value]) => [name, value === '$HOST' ? hostLine : value]));
    for (const [name, value] of Object.entries(want)) expect(got.headers[name], name).toBe(value);
    // Whatever was asked, the upstream gets the gateway's view of the connection.
    expect(got.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(got.headers['x-forwarded-proto']).toBe('http');
    expect(got.headers['x-forwarded-host']).toBe(hostLine);
    expect(JSON.stringify(got.headers)).not.toMatch(/6\.6\.6\.6|evil\.example|"\/admin"/);
  });

  it('are replaced on a public route too', async () => {
    const got = received(
      await rawRequest(gw.url, ['GET /public/where HTTP/1.1', 'x-forwarded-for: 6.6.6.6', 'forwarded: for=6.6.6.6', 'x-forwarded-proto: https']),
    );
    expect(got.headers).toMatchObject({ 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'http' });
    expect(got.headers.forwarded).toBeUndefined();
  });
});

describe('forwarding headers from a trusted proxy (the contrast)', () => {
  let trusting: TestGateway;
  let upstream: Upstream;
  beforeAll(async () => {
    upstream = await startUpstream(report);
    trusting = await startTestGateway({
      config: { server: { trustedProxies: ['127.0.0.1'] }, routes: [{ prefix: '/api', upstreams: [upstream.url], auth: 'none' }] },
    });
  });
  afterAll(async () => {
    await trusting.close();
    await upstream.close();
  });

  it("extends the chain, keeps the proxy's Host and proto, and still drops odd spellings", async () => {
    const got = received(
      await rawRequest(trusting.url, [
        'GET /api/where HTTP/1.1',
        'x-forwarded-for: 203.0.113.7',
        'x-forwarded-host: shop.example',
        'x-forwarded-proto: https',
        'forwarded: for=203.0.113.7',
        'X_Forwarded_For: 6.6.6.6',
      ]),
    );
    expect(got.headers).toMatchObject({
      'x-forwarded-for': '203.0.113.7, 127.0.0.1',
      'x-forwarded-host': 'shop.example',
      'x-forwarded-proto': 'https',
      forwarded: expect.stringMatching(/^for=203\.0\.113\.7, for=127\.0\.0\.1;host=".*";proto=http$/),
    });
    expect(got.headers.x_forwarded_for).toBeUndefined();
  });

  it('keeps the chain a trusted proxy built even when its client nominates it in Connection', async () => {
    const got = received(
      await rawRequest(trusting.url, [
        'GET /api/where HTTP/1.1',
        'x-forwarded-for: 203.0.113.7',
        'connection: x-forwarded-for, x-forwarded-proto',
        'x-forwarded-proto: https',
      ]),
    );
    expect(got.headers).toMatchObject({ 'x-forwarded-for': '203.0.113.7, 127.0.0.1', 'x-forwarded-proto': 'https' });
  });
});

describe('X-Request-Id from the client', () => {
  it.each([
    ['a space', 'x-request-id: abc def'],
    ['markup', 'x-request-id: <script>alert(1)</script>'],
    ['a slash', 'x-request-id: ../../etc/passwd'],
    ['a quote', 'x-request-id: a"b'],
    ['a comma (two ids)', 'x-request-id: one, two'],
    ['129 characters', `x-request-id: ${'a'.repeat(129)}`],
    ['a non-ASCII byte', 'x-request-id: caf\u00e9'],
    ['an empty value', 'x-request-id: '],
    ['the header twice', 'x-request-id: first\r\nx-request-id: second'],
  ])('with %s is replaced by a generated one, sent upstream and back', async (_case, line) => {
    const response = await rawRequest(gw.url, ['GET /api/id HTTP/1.1', auth, line]);
    const got = received(response);
    const id = got.headers['x-request-id'];
    expect(id).toMatch(UUID);
    expect(response.headers['x-request-id']).toBe(id);
  });

  it('spelt X_Request_Id or x.request.id never reaches the upstream', async () => {
    const response = await rawRequest(gw.url, ['GET /api/id HTTP/1.1', auth, 'X_Request_Id: forged-id', 'x.request.id: forged-id', 'x-request-id: trace-7']);
    const got = received(response);
    expect(got.headers['x-request-id']).toBe('trace-7');
    expect(JSON.stringify(got.headers)).not.toContain('forged-id');
  });

  it('that is sane is kept (the contrast)', async () => {
    const response = await rawRequest(gw.url, ['GET /api/id HTTP/1.1', auth, 'x-request-id: trace-42.a:b@c_d']);
    expect(received(response).headers['x-request-id']).toBe('trace-42.a:b@c_d');
    expect(response.headers['x-request-id']).toBe('trace-42.a:b@c_d');
  });
});

describe('Connection header nominations', () => {
  it("Connection: x-gatehouse-subject does not strip the gateway's identity header", async () => {
    const got = received(await rawRequest(gw.url, ['GET /api/c HTTP/1.1', auth, 'connection: x-gatehouse-subject', 'x-gatehouse-subject: forged']));
    expectGatewayIdentity(got.headers);
    expect(JSON.stringify(got.headers)).not.toContain('forged');
  });

  it('nominating every header the gateway sets strips none of them', async () => {
    const nominated = [...IDENTITY, 'x-request-id', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host'].join(', ');
    const response = await rawRequest(gw.url, ['GET /api/c HTTP/1.1', auth, `connection: ${nominated}`, 'x-request-id: trace-9']);
    const got = received(response);
    expectGatewayIdentity(got.headers);
    expect(got.headers).toMatchObject({ 'x-request-id': 'trace-9', 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'http', 'x-forwarded-host': hostLine });
  });

  it("Connection: x-gatehouse-subject on a public route does not smuggle the client's copy through", async () => {
    const got = received(
      await rawRequest(gw.url, [
        'GET /public/c HTTP/1.1',
        'connection: x-gatehouse-subject, X_Gatehouse_Subject',
        'x-gatehouse-subject: forged',
        'X_Gatehouse_Subject: forged',
      ]),
    );
    expectNoIdentity(got.headers);
  });

  it('Connection: host keeps the Host header', async () => {
    const got = received(await rawRequest(gw.url, ['GET /api/c HTTP/1.1', auth, 'connection: host']));
    expect(got.headers.host).toBe(hostLine);
  });

  it('Connection: content-length keeps the body framed', async () => {
    const response = await rawExchange(
      gw.url,
      ['POST /api/c HTTP/1.1', `host: ${hostLine}`, auth, 'content-length: 11', 'connection: close, content-length'],
      'hello world',
    );
    const got = received(response);
    expect(got.body).toBe('hello world');
    expect(got.headers['content-length']).toBe('11');
  });

  it('Connection: transfer-encoding keeps a chunked body framed', async () => {
    const response = await rawExchange(
      gw.url,
      ['POST /api/c HTTP/1.1', `host: ${hostLine}`, auth, 'transfer-encoding: chunked', 'connection: close, transfer-encoding'],
      '5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n',
    );
    const got = received(response);
    expect(got.body).toBe('hello world');
    // Framed, whichever way the engine chose: chunked, or a length for a body it already holds whole.
    expect(got.headers['transfer-encoding'] === 'chunked' || got.headers['content-length'] === '11').toBe(true);
  });

  it('Connection: authorization cannot turn the bearer check off', async () => {
    const response = await rawRequest(gw.url, ['GET /api/c HTTP/1.1', 'connection: authorization', 'authorization: Bearer not-a-token']);
    expect(response.status).toBe(401);
  });

  it('an ordinary nomination is honoured (the contrast)', async () => {
    const got = received(await rawRequest(gw.url, ['GET /api/c HTTP/1.1', auth, 'connection: x-hop', 'x-hop: drop me', 'x-end: keep me']));
    expect(got.headers['x-hop']).toBeUndefined();
    expect(got.headers['x-end']).toBe('keep me');
  });
});
