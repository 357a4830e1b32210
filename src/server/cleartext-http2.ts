// HTTP/2 without TLS by prior knowledge (h2c, RFC 9113 3.3) on the plain
// listener, beside HTTP/1.1 on the same port (`server.http2.cleartext`): for
// a load balancer in front that terminates TLS and speaks h2 to its backends.
// Each new connection's first bytes are looked at: the HTTP/2 connection
// preface (`PRI * HTTP/2.0…`) hands it to an HTTP/2 server, anything else to
// Node's HTTP/1.1 server as before; the bytes read go back first. There is no
// `Upgrade: h2c` (RFC 9113 dropped it). The HTTP/2 sessions get the TLS
// listener's bounds (http2-sessions.ts), and are sent GOAWAY when the gateway stops.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttp2Server } from 'node:http2';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { http2Classes } from './http2-request.js';
import { guardHttp2Sessions, type ResetBounds } from './http2-sessions.js';

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export interface CleartextHttp2Settings extends ResetBounds {
  maxConcurrentStreams: number;
}

/** Makes `server` (Node's HTTP/1.1 server, not yet listening) take h2c connections too. */
export function acceptCleartextHttp2(server: Server, handler: RequestListener, settings: CleartextHttp2Settings, idleTimeoutMs: number, logger: Logger): void {
  // HTTP/2 requests read as HTTP/1.1's do (their host, their own socket): http2-request.ts.
  const http2 = createHttp2Server({ ...http2Classes, settings: { maxConcurrentStreams: settings.maxConcurrentStreams } }, handler as never);
  http2.on('session', (session) => session.setTimeout(idleTimeoutMs, () => session.close()));
  const sessions = guardHttp2Sessions(http2, settings, logger);
  // Node's own HTTP/1.1 connection listener, called once a connection is known not to be h2c.
  const [http1] = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeListener('connection', http1!);
  server.on('connection', (socket: Socket) => {
    let seen = Buffer.alloc(0);
    const sniff = (): void => {
      let chunk: Buffer | null;
      while ((chunk = socket.read() as Buffer | null) !== null) seen = Buffer.concat([seen, chunk]);
      const length = Math.min(seen.length, PREFACE.length);
      const h2c = seen.subarray(0, length).equals(PREFACE.subarray(0, length));
      // Not yet told apart: the start of the preface so far.
      if (h2c && seen.length < PREFACE.length) return;
      socket.removeListener('readable', sniff);
      socket.unshift(seen);
      if (h2c) http2.emit('connection', socket);
      else http1!.call(server, socket);
    };
    socket.on('readable', sniff);
  });
  const closeIdleHttp1 = server.closeIdleConnections.bind(server);
  const closeAllHttp1 = server.closeAllConnections.bind(server);
  server.closeIdleConnections = () => {
    closeIdleHttp1();
    sessions.closeIdle();
  };
  server.closeAllConnections = () => {
    closeAllHttp1();
    sessions.closeAll();
  };
}
