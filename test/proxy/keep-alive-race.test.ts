// The keep-alive race: a backend closes an idle keep-alive connection just as
// the gateway sends the next request on it. A request without a body that
// meets a reused connection closed before one byte of its answer is sent once
// more, on a fresh connection; a request whose body was streamed, a request
// that failed on a fresh connection, and a request whose client went away are
// not.
import { once } from 'node:events';
import { request as httpRequest, Agent } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/** Requests in the volume test (the 10,000: KEEP_ALIVE_RACE_REQUESTS=10000; 1,000 keep the suite quick and fail without the retry). */
const VOLUME = Number(process.env.KEEP_ALIVE_RACE_REQUESTS ?? 1000);
const CLIENTS = 4;
/** The racing backend closes each connection within this long after its answer. */
const CLOSE_WITHIN_MS = 10;

interface Backend {
  server: Server;
  url: string;
  /** Request lines received, in order, over every connection. */
  seen: string[];
  /** Connections accepted. */
  connections: number;
  /** Connections open now. */
  sockets: Set<Socket>;
  close(): Promise<void>;
}

/**
 * A raw HTTP/1.1 backend. `decide` is asked for each request head (its line
 * and how many requests its connection carried before it): `answer` sends a
 * 200 keep-alive answer; `answer-then-close` sends it and destroys the
 * connection right after, without `Connection: close` (the race); `close`
 * destroys the connection without a byte of answer; `hold` says nothing.
 */
async function startBackend(decide: (line: string, before: number) => 'answer' | 'answer-then-close' | 'close' | 'hold'): Promise<Backend> {
  const backend: Backend = { server: createServer(), url: '', seen: [], connections: 0, sockets: new Set(), close: async () => undefined };
  backend.server.on('connection', (socket: Socket) => {
    backend.connections += 1;
    backend.sockets.add(socket);
    socket.once('close', () => backend.sockets.delete(socket));
    let buffered = '';
    let carried = 0;
    let closing = false;
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      for (let end = buffered.indexOf('\r\n\r\n'); end !== -1; end = buffered.indexOf('\r\n\r\n')) {
        const head = buffered.slice(0, end);
        buffered = buffered.slice(end + 4);
        const line = head.slice(0, head.indexOf('\r\n'));
        backend.seen.push(line);
        const what = closing ? 'close' : decide(line, carried);
        carried += 1;
        if (what === 'close') {
          socket.destroy();
          return;
        }
        if (what === 'hold') return;
        // Bodies are not read: the requests that carry one are refused here.
        socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok');
        // Soon after the answer, about when the gateway may send the next
        // request: a request that arrives meanwhile is never answered (the
        // backend has decided to close), as when the close and the request cross.
        if (what === 'answer-then-close') {
          closing = true;
          setTimeout(() => socket.destroy(), Math.random() * CLOSE_WITHIN_MS);
        }
      }
    });
  });
  backend.server.listen(0, '127.0.0.1');
  await once(backend.server, 'listening');
  backend.url = `http://127.0.0.1:${(backend.server.address() as AddressInfo).port}`;
  backend.close = () => new Promise<void>((resolve) => backend.server.close(() => resolve()));
  return backend;
}

interface Answer {
  status?: number;
  error?: string;
}

function get(url: string, agent: Agent | false): Promise<Answer> {
  return new Promise((resolve) => {
    const req = httpRequest(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code }));
    req.end();
  });
}

let racing: Backend;
let secondCloses: Backend;
let alwaysCloses: Backend;
let holdsSecond: Backend;
let gw: TestGateway;

beforeAll(async () => {
  [racing, secondCloses, alwaysCloses, holdsSecond] = await Promise.all([
    startBackend(() => 'answer-then-close'),
    // The race made certain: the second request on a connection meets it closing.
    startBackend((_line, before) => (before === 0 ? 'answer' : 'close')),
    startBackend(() => 'close'),
    startBackend((_line, before) => (before === 0 ? 'answer' : 'hold')),
  ]);
  gw = await startTestGateway({
    config: {
      // Thousands of requests: no access line for each.
      log: { level: 'warn' },
      routes: [
        { name: 'racing', prefix: '/racing', upstreams: [racing.url], auth: 'none' },
        { name: 'second', prefix: '/second', upstreams: [secondCloses.url], auth: 'none' },
        { name: 'always', prefix: '/always', upstreams: [alwaysCloses.url], auth: 'none' },
        { name: 'hold', prefix: '/hold', upstreams: [holdsSecond.url], auth: 'none' },
      ],
    },
  });
});

afterAll(async () => {
  await gw?.close();
  await Promise.all([racing, secondCloses, alwaysCloses, holdsSecond].map((b) => b?.close()));
});

describe('the keep-alive race', () => {
  it(`a backend that closes after every answer: no 502 in ${VOLUME} requests`, async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
    const statuses = new Map<string, number>();
    let sent = 0;
    const client = async () => {
      while (sent < VOLUME) {
        sent += 1;
        const answer = await get(`${gw.url}/racing/item`, agent);
        const key = answer.error ?? String(answer.status);
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, client));
    agent.destroy();
    expect(Object.fromEntries(statuses)).toEqual({ 200: VOLUME });
    // The race did happen: some requests reached the backend twice.
    expect(racing.seen.length).toBeGreaterThan(VOLUME);
  }, 120_000);

  it('a request without a body lost on a reused connection is sent once more, on a fresh one', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect(await get(`${gw.url}/second/warm`, agent)).toEqual({ status: 200 });
    const connectionsBefore = secondCloses.connections;
    expect(await get(`${gw.url}/second/raced`, agent)).toEqual({ status: 200 });
    agent.destroy();
    expect(secondCloses.seen.filter((line) => line.startsWith('GET /second/raced'))).toHaveLength(2);
    expect(secondCloses.connections).toBe(connectionsBefore + 1);
  });

  it('a request whose body was streamed is not sent again: 502', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect(await get(`${gw.url}/second/warm`, agent)).toEqual({ status: 200 });
    const status = await new Promise<number | string>((resolve) => {
      const req = httpRequest(`${gw.url}/second/upload`, { method: 'POST', agent, headers: { 'content-type': 'text/plain' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
      // Chunked: the gateway streams it through as it arrives.
      req.write('part one;');
      req.end('part two');
    });
    agent.destroy();
    expect(status).toBe(502);
    expect(secondCloses.seen.filter((line) => line.startsWith('POST /second/upload'))).toHaveLength(1);
  });

  it('a request that fails on a fresh connection is not sent again: 502', async () => {
    expect(await get(`${gw.url}/always/first`, false)).toEqual({ status: 502 });
    expect(alwaysCloses.seen.filter((line) => line.startsWith('GET /always/first'))).toHaveLength(1);
  });

  it('a request whose client went away is not sent again', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect(await get(`${gw.url}/hold/warm`, agent)).toEqual({ status: 200 });
    const connectionsBefore = holdsSecond.connections;
    // The backend holds the second request of its connection; the client gives up on it.
    const req = httpRequest(`${gw.url}/hold/abandoned`, { agent });
    req.on('error', () => undefined);
    req.end();
    while (!holdsSecond.seen.some((line) => line.startsWith('GET /hold/abandoned'))) await new Promise((resolve) => setImmediate(resolve));
    const upstreamGone = new Promise<void>((resolve) => {
      for (const socket of holdsSecond.sockets) socket.once('close', () => resolve());
    });
    req.destroy();
    agent.destroy();
    // The gateway gives the upstream request up: the held connection closes.
    await upstreamGone;
    expect(await get(`${gw.url}/hold/after`, false)).toEqual({ status: 200 });
    expect(holdsSecond.seen.filter((line) => line.startsWith('GET /hold/abandoned'))).toHaveLength(1);
    expect(holdsSecond.connections).toBe(connectionsBefore + 1);
  });
});
