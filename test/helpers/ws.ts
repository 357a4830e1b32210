// WebSocket helpers: an echoing `ws` upstream on port 0 that records every
// handshake (and every TCP connection, so a test can prove nothing reached
// it), a client that reports a refused upgrade instead of throwing, and a raw
// upgrade request for paths the WHATWG URL parser would normalise.
import { EventEmitter, once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { parseResponseHead } from './raw-http.js';

export interface WsUpstream {
  server: Server;
  url: string;
  /** TCP connections accepted, upgraded or not. */
  connections: number;
  /** Every upgrade request seen, in order. */
  handshakes: Array<{ url: string; headers: IncomingHttpHeaders }>;
  /** The server side of every open WebSocket. */
  sockets: Set<WebSocket>;
  /** Every message received, as text. */
  received: string[];
  /** Emits 'close' ({ code, reason, requestId }) when the server side of a WebSocket has closed. */
  events: EventEmitter;
  close(): Promise<void>;
}

export interface Closed {
  code: number;
  reason: string;
}

/** Resolves once `count` more server-side WebSockets of the upstream have closed, with their codes and reasons. */
export function upstreamCloses(upstream: WsUpstream, count: number): Promise<Closed[]> {
  const seen: Closed[] = [];
  return new Promise((resolve) => {
    const onClose = ({ code, reason }: Closed) => {
      seen.push({ code, reason });
      if (seen.length < count) return;
      upstream.events.off('close', onClose);
      resolve(seen);
    };
    upstream.events.on('close', onClose);
  });
}

/** Echoes every message back; picks the subprotocol `chat` when it is offered, none otherwise. */
export async function startWsUpstream(): Promise<WsUpstream> {
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (protocols) => (protocols.has('chat') ? 'chat' : false) });
  const server = createServer((_req, res) => res.writeHead(426).end());
  const upstream: WsUpstream = {
    server,
    url: '',
    connections: 0,
    handshakes: [],
    sockets: new Set(),
    received: [],
    events: new EventEmitter(),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of upstream.sockets) socket.terminate();
        wss.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on('connection', () => (upstream.connections += 1));
  server.on('upgrade', (req: IncomingMessage, socket, head) => {
    upstream.handshakes.push({ url: req.url ?? '', headers: req.headers });
    wss.handleUpgrade(req, socket, head, (ws) => {
      upstream.sockets.add(ws);
      ws.on('close', (code: number, reason: Buffer) => {
        upstream.sockets.delete(ws);
        upstream.events.emit('close', { code, reason: reason.toString(), requestId: req.headers['x-request-id'] });
      });
      ws.on('message', (data: RawData, isBinary) => {
        upstream.received.push(data.toString());
        ws.send(data, { binary: isBinary });
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  upstream.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return upstream;
}

export type Opened = { ok: true; ws: WebSocket };
export type Refused = { ok: false; status: number; headers: IncomingHttpHeaders; body: string };

/** Opens a WebSocket through the gateway; a refused upgrade resolves with the HTTP answer. */
export function openWs(url: string, options: { headers?: Record<string, string>; protocols?: string[] } = {}): Promise<Opened | Refused> {
  const ws = new WebSocket(url.replace(/^http/, 'ws'), options.protocols ?? [], { headers: options.headers ?? {} });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ok: true, ws }));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        resolve({ ok: false, status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
        ws.terminate();
      });
    });
  });
}

/** The open WebSocket, or a failed expectation naming the refusal. */
export async function mustOpen(url: string, options: Parameters<typeof openWs>[1] = {}): Promise<WebSocket> {
  const result = await openWs(url, options);
  if (!result.ok) throw new Error(`upgrade refused: ${result.status} ${result.body}`);
  return result.ws;
}

export function nextMessage(ws: WebSocket, timeoutMs = 2_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no message in time')), timeoutMs);
    ws.once('message', (data: RawData) => {
      clearTimeout(timer);
      resolve(data.toString());
    });
  });
}

/** Sends `text` and resolves with what comes back. */
export async function roundTrip(ws: WebSocket, text: string): Promise<string> {
  const reply = nextMessage(ws);
  ws.send(text);
  return reply;
}

/** Resolves with the close code and reason once the socket has closed (at once when it has already). */
/** Resolves when the upstream's side of the tunnel whose handshake carried this X-Request-Id has closed. */
export function upstreamClosed(upstream: WsUpstream, requestId: string): Promise<void> {
  return new Promise((resolve) => {
    const onClose = (closed: Closed & { requestId?: string }) => {
      if (closed.requestId !== requestId) return;
      upstream.events.off('close', onClose);
      resolve();
    };
    upstream.events.on('close', onClose);
  });
}

export async function closed(ws: WebSocket): Promise<Closed> {
  if (ws.readyState === WebSocket.CLOSED) return { code: 1006, reason: '' };
  const [code, reason] = (await once(ws, 'close')) as [number, Buffer];
  return { code, reason: reason.toString() };
}

export interface RawUpgradeResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * An upgrade request with the path exactly as written. Resolves with the
 * answer: the refusal with its body, or a 101's head (the socket is then closed).
 */
export function rawUpgrade(url: string, path: string, extraLines: string[] = []): Promise<RawUpgradeResponse> {
  const { hostname, port } = new URL(url);
  const lines = [
    `GET ${path} HTTP/1.1`,
    `host: ${hostname}:${port}`,
    'connection: Upgrade',
    'upgrade: websocket',
    'sec-websocket-version: 13',
    'sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==',
    ...extraLines,
  ];
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(`${lines.join('\r\n')}\r\n\r\n`));
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer in time: ${JSON.stringify(text)}`));
    }, 3_000);
    const finish = (ended = false) => {
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return;
      const { status, headers } = parseResponseHead(text.slice(0, end));
      const body = text.slice(end + 4);
      const length = Number(headers['content-length'] ?? NaN);
      if (!ended && status !== 101 && !(Buffer.byteLength(body) >= length)) return;
      clearTimeout(timer);
      socket.destroy();
      resolve({ status, headers, body });
    };
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      finish();
    });
    socket.on('end', () => {
      if (text.includes('\r\n\r\n')) finish(true);
      else {
        clearTimeout(timer);
        reject(new Error(`connection closed without an answer: ${JSON.stringify(text)}`));
      }
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}
