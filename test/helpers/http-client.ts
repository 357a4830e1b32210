// Clients for proxy tests that need more than fetch gives: every raw header
// (each Set-Cookie, the Connection and Keep-Alive the gateway sent), a body
// streamed from a Readable, a chosen Agent, and exact bytes on a socket.
import { Agent, request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Readable } from 'node:stream';

export interface ClientResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** Name, value, name, value… as the gateway sent them. */
  rawHeaders: string[];
  body: Buffer;
  /** Whether the request went out on a kept-alive connection. */
  reusedSocket: boolean;
}

export interface ClientRequestOptions {
  method?: string;
  headers?: OutgoingHttpHeaders;
  body?: string | Buffer | Readable;
  /** Default: a fresh connection, closed after the response. */
  agent?: Agent | false;
  /** Fails the request (and the test) rather than hanging. Default 5 s. */
  timeoutMs?: number;
}

export function send(url: string, options: ClientRequestOptions = {}): Promise<ClientResponse> {
  const { method = 'GET', headers = {}, body, agent = false, timeoutMs = 5_000 } = options;
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        clearTimeout(timer);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          rawHeaders: res.rawHeaders,
          body: Buffer.concat(chunks),
          reusedSocket: req.reusedSocket,
        });
      });
    });
    const timer = setTimeout(() => req.destroy(new Error(`${method} ${url}: no complete response within ${timeoutMs} ms`)), timeoutMs);
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    if (body === undefined) req.end();
    else if (typeof body === 'string' || Buffer.isBuffer(body)) req.end(body);
    else body.pipe(req);
  });
}

export interface RawExchange {
  socket: Socket;
  /** Everything received so far. */
  received(): Buffer;
  /** Resolves when the gateway has closed (or reset) the connection, with what it sent. */
  closed: Promise<Buffer>;
  /** Resolves once `text` has been received. */
  waitFor(text: string, timeoutMs?: number): Promise<Buffer>;
}

/** A connection on which the test writes exactly the bytes it wants, when it wants. */
export async function rawConnection(url: string): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const chunks: Buffer[] = [];
  const waiters = new Set<() => void>();
  socket.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    for (const waiter of waiters) waiter();
  });
  // A reset after the answer is fine: the bytes before it were delivered.
  socket.on('error', () => {});
  const closed = new Promise<Buffer>((resolve) => socket.once('close', () => resolve(Buffer.concat(chunks))));
  return {
    socket,
    received: () => Buffer.concat(chunks),
    closed,
    waitFor(text, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const all = Buffer.concat(chunks);
          if (!all.includes(text)) return false;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(all);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `did not receive ${JSON.stringify(text)} within ${timeoutMs} ms; got ${JSON.stringify(Buffer.concat(chunks).toString('latin1').slice(0, 500))}`,
            ),
          );
        }, timeoutMs);
        if (!check()) waiters.add(check);
      });
    },
  };
}

export interface ParsedHead {
  status: number;
  /** Lower-case names; repeated headers keep every value. */
  headers: Map<string, string[]>;
  /** The bytes after the head. */
  rest: Buffer;
}

export function parseHead(data: Buffer): ParsedHead {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`no complete response head in ${JSON.stringify(data.toString('latin1').slice(0, 500))}`);
  const [statusLine = '', ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
  const headers = new Map<string, string[]>();
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
  }
  return { status: Number(statusLine.split(' ')[1]), headers, rest: data.subarray(end + 4) };
}

/** Polls until `check` holds, or fails after `timeoutMs`. */
export async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
