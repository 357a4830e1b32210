// Lingering close: a request answered before its body was read (a login body
// over the limit, a proxied request refused at admission or on its declared
// length) must still reach a client that keeps sending its body, as Node's own
// `http` client does. Closing at once would reset the connection under the
// client, and it would get EPIPE or ECONNRESET instead of the answer. And the
// lingering is bounded: a client that never stops sending, trickles, or goes
// quiet is cut, and nothing hangs.
import { execFile } from 'node:child_process';
import { createServer, request as httpRequest } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { once } from 'node:events';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOGIN_PATH } from '../../src/http/gateway-paths.js';
import { lingerAfterEarlyAnswer, type LingerBounds } from '../../src/http/linger.js';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { echo, startUpstream, type Upstream } from '../helpers/upstream.js';

const TRIES = 50;

/**
 * The client, in a process of its own as a real one is (in this process, the
 * gateway and the client would share one event loop, and the client would
 * always read the answer before the gateway closed). Node's own `http` client
 * sends the head and the first 64 KB of a 2 MB body, is busy for a moment (as
 * a loaded client is), then sends the rest. A gateway that has answered and
 * closed meanwhile resets the connection when the rest arrives, and the reset
 * throws away the answer the client had not read yet: EPIPE or ECONNRESET.
 * Prints how each try ended: a status read whole, or an error.
 */
const CLIENT = `
import { request } from 'node:http';
const [url, path, tries, extra, busy] = process.argv.slice(-5);
const BODY = Buffer.alloc(2 * 1024 * 1024, 'a');
const FIRST = 64 * 1024;
const BUSY_MS = Number(busy);
const { hostname, port } = new URL(url);
const counts = {};
for (let i = 0; i < Number(tries); i++) {
  const key = await new Promise((resolve) => {
    const headers = { 'content-type': 'application/json', 'content-length': String(BODY.length), ...JSON.parse(extra) };
    const req = request({ host: hostname, port, path, method: 'POST', agent: false, headers });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve(res.statusCode + (body.startsWith('{"$diagnoses"') ? ' $diagnoses' : ' other body')));
      res.on('error', (error) => resolve(res.statusCode + ' cut: ' + error.code));
    });
    req.on('error', (error) => resolve('error ' + error.code));
    req.flushHeaders();
    req.write(BODY.subarray(0, FIRST));
    setTimeout(() => {
      const until = Date.now() + BUSY_MS;
      while (Date.now() < until);
      req.end(BODY.subarray(FIRST));
    }, 0);
  });
  counts[key] = (counts[key] ?? 0) + 1;
}
process.stdout.write(JSON.stringify(counts));
`;

/** How `TRIES` requests from the client process ended, by outcome. */
async function tally(url: string, path: string, tries = TRIES, headers: Record<string, string> = {}, busyMs = 20): Promise<Record<string, number>> {
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', CLIENT, url, path, String(tries), JSON.stringify(headers), String(busyMs)]);
  return JSON.parse(stdout) as Record<string, number>;
}

/** One request with Node's own client, in this process, sending the 2 MB body at once. */
function send(url: string, path: string): Promise<{ status?: number; error?: string }> {
  const { hostname, port } = new URL(url);
  const body = Buffer.alloc(2 * 1024 * 1024, 'a');
  return new Promise((resolve) => {
    const req = httpRequest({ host: hostname, port, path, method: 'POST', agent: false, headers: { 'content-length': String(body.length) } });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code }));
    req.end(body);
  });
}

const run = promisify(execFile);

let upstream: Upstream;
let gw: TestGateway;
/** The same gateway with tight bounds, for the clients that never finish. */
let tight: TestGateway;

const ROUTES = (upstreamUrl: string) => [
  { name: 'private', prefix: '/private', upstreams: [upstreamUrl] },
  { name: 'small', prefix: '/small', upstreams: [upstreamUrl], auth: 'none', bodyLimitBytes: 1024 },
];

beforeAll(async () => {
  upstream = await startUpstream(echo);
  gw = await startTestGateway({ config: { routes: ROUTES(upstream.url) } });
  tight = await startTestGateway({
    config: { routes: ROUTES(upstream.url), server: { lingeringClose: { timeMs: 1500, idleTimeoutMs: 500, maxBytes: 256 * 1024 } } },
  });
});

afterAll(async () => {
  await Promise.all([gw?.close(), tight?.close()]);
  await upstream?.close();
});

describe('an answer given before the body was read reaches a client still sending it', () => {
  it('a login with a 2 MB body: the 400 is read every time', async () => {
    const counts = await tally(gw.url, LOGIN_PATH);
    expect(counts).toEqual({ '400 $diagnoses': TRIES });
  });

  it('a proxied request refused at admission (no token): the 401 is read every time', async () => {
    const counts = await tally(gw.url, '/private/upload');
    expect(counts).toEqual({ '401 $diagnoses': TRIES });
  });

  it('a proxied request over its route body limit: the 413 is read every time', async () => {
    const counts = await tally(gw.url, '/small/upload');
    expect(counts).toEqual({ '413 $diagnoses': TRIES });
    // Refused on its declared length: nothing reached the upstream.
    expect(upstream.seen.filter((r) => r.url.startsWith('/small'))).toEqual([]);
  });
});

/** How long the front door holds a refusal here, and how long the client is busy mid-body: longer, so the answer comes while it is. */
const HOLD_MS = 250;
const BUSY_PAST_HOLD_MS = 750;

describe('a refusal from the request head (the front door) reaches a client still sending its body', () => {
  it('an address refused for its flood of invalid tokens: the 429 is read every time', async () => {
    // Head refusals are held HOLD_MS (a tarpit), shorter than the default second so ten tries take seconds, not half a minute.
    const front = await startTestGateway({
      config: { server: { trustedProxies: ['127.0.0.1'] }, limits: { abuse: { holdMs: HOLD_MS } }, routes: ROUTES(upstream.url) },
    });
    try {
      const attacker = { 'x-forwarded-for': '203.0.113.9' };
      const { access_token } = await login(front.url, 'alice', 'alice-password-1');
      // 200 refused tokens, sent together (from the 20th each 401 is held): the address is refused from the request head from now on.
      const refusals = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          fetch(`${front.url}/private/x`, { headers: { ...attacker, authorization: `Bearer ${access_token.slice(0, -8)}${String(i).padStart(8, '0')}` } }),
        ),
      );
      expect(refusals.map((r) => r.status)).toEqual(Array(200).fill(401));
      // Each head refusal is held before it is answered: fewer tries, and a
      // client busy for longer than that, so that the answer comes while it is.
      expect(await tally(front.url, '/private/upload', 10, attacker, BUSY_PAST_HOLD_MS)).toEqual({ '429 $diagnoses': 10 });
    } finally {
      await front.close();
    }
  }, 90_000);

  it('a request shed while the event loop is late (a garbage token): the 503 is read every time', async () => {
    const shedding = await startTestGateway({
      config: {
        server: { trustedProxies: ['127.0.0.1'] },
        // Readings are the test's own (judge): the sampler's interval is an hour.
        limits: { loadShedding: { enabled: true, sampleIntervalMs: 3_600_000 }, abuse: { holdMs: HOLD_MS } },
        routes: ROUTES(upstream.url),
      },
    });
    try {
      shedding.gateway.load.judge({ delayMs: 200, utilization: 1 });
      const client = { 'x-forwarded-for': '203.0.113.10', authorization: 'Bearer garbage' };
      // Held as the other head refusals are: a client busy for longer than that.
      expect(await tally(shedding.url, '/private/upload', 10, client, BUSY_PAST_HOLD_MS)).toEqual({ '503 $diagnoses': 10 });
    } finally {
      await shedding.close();
    }
  }, 90_000);
});

describe('lingering is bounded', () => {
  it('through the gateway: a client that never stops sending is cut after maxBytes, its answer sent first', async () => {
    const socket = await rawPost(tight.url, '/private/x', 1 << 30);
    const text = readUntilClosed(socket);
    pumpUntilClosed(socket);
    expect(await text).toMatch(/^HTTP\/1\.1 401 /);
    expect((await send(tight.url, LOGIN_PATH)).status).toBe(400);
  });

  // Each bound alone, on a bare node:http server whose every answer is early:
  // the other two bounds are out of reach, and the client keeps its side open
  // (allowHalfOpen), so only the bound under test can close the connection.
  const FAR = 600_000;

  it('maxBytes: a client that never stops sending is cut', async () => {
    const server = await earlyAnswering({ timeMs: FAR, idleTimeoutMs: FAR, maxBytes: 256 * 1024 });
    const socket = await rawPost(server.url, '/x', 1 << 30);
    const text = readUntilClosed(socket);
    pumpUntilClosed(socket);
    await server.closed;
    expect(await text).toMatch(/^HTTP\/1\.1 401 /);
    await server.close();
  });

  it('timeMs: a client that trickles its body for ever is cut', async () => {
    const server = await earlyAnswering({ timeMs: 300, idleTimeoutMs: FAR, maxBytes: 1 << 30 });
    const socket = await rawPost(server.url, '/x', 1 << 30);
    const text = readUntilClosed(socket);
    const trickle = setInterval(() => socket.write('a'), 20);
    try {
      await server.closed;
    } finally {
      clearInterval(trickle);
    }
    socket.end();
    expect(await text).toMatch(/^HTTP\/1\.1 401 /);
    await server.close();
  });

  it('idleTimeoutMs: a client that goes quiet half way through its body is cut', async () => {
    const server = await earlyAnswering({ timeMs: FAR, idleTimeoutMs: 200, maxBytes: 1 << 30 });
    const socket = await rawPost(server.url, '/x', 1 << 20);
    const text = readUntilClosed(socket);
    socket.write(Buffer.alloc(1000, 'a'));
    await server.closed;
    socket.end();
    expect(await text).toMatch(/^HTTP\/1\.1 401 /);
    await server.close();
  });

  it('a body that ends: the connection closes at its end, without waiting for a bound', async () => {
    const server = await earlyAnswering({ timeMs: FAR, idleTimeoutMs: FAR, maxBytes: 1 << 30 });
    const socket = await rawPost(server.url, '/x', 100_000);
    const text = readUntilClosed(socket);
    socket.write(Buffer.alloc(100_000, 'a'));
    await server.closed;
    socket.end();
    expect(await text).toMatch(/^HTTP\/1\.1 401 [^]*connection: close/i);
    await server.close();
  });
});

interface EarlyServer {
  url: string;
  /** Resolves when the server side of the first connection has closed. */
  closed: Promise<void>;
  close(): Promise<void>;
}

/** A node:http server answering 401 at once, before reading any body, lingering within `bounds`. */
async function earlyAnswering(bounds: LingerBounds): Promise<EarlyServer> {
  const server = createServer((req, res) => {
    lingerAfterEarlyAnswer(req, res, bounds);
    res.writeHead(401, { 'content-type': 'text/plain' }).end('refused');
  });
  const closed = new Promise<void>((resolve) => server.once('connection', (socket: Socket) => socket.once('close', () => resolve())));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    closed,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Writes body bytes as fast as the connection takes them, until it closes. */
function pumpUntilClosed(socket: Socket): void {
  const chunk = Buffer.alloc(16 * 1024, 'a');
  const pump = () => {
    while (!socket.destroyed && socket.write(chunk));
    if (!socket.destroyed) socket.once('drain', pump);
  };
  pump();
}

/** A raw connection that has sent a request head promising `length` body bytes; it keeps its side open when the server ends its own. */
async function rawPost(url: string, path: string, length: number): Promise<Socket> {
  const { hostname, port } = new URL(url);
  const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
  await once(socket, 'connect');
  socket.write(`POST ${path} HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`);
  return socket;
}

/** Everything the gateway wrote, once it has closed the connection (a reset after the answer counts as closed). */
function readUntilClosed(socket: Socket): Promise<string> {
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => undefined);
  return new Promise((resolve) => socket.once('close', () => resolve(Buffer.concat(chunks).toString('latin1'))));
}
