// The client side of a WebSocket tunnel: the client's WebSocket, accepted
// only once the upstream's is open (websocket.ts), with what the upstream
// decided: the subprotocol its 101 named and the extra headers it sent. `ws`
// writes the handshake itself; a client handshake that is broken in itself
// (a bad Sec-WebSocket-Key…) is handed back to be refused like any other.
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type ServerOptions, type WebSocket } from 'ws';
import { REQUEST_ID_HEADER } from '../observability/request-id.js';

export interface ClientSideOptions {
  /** The largest message taken from the client; a larger one closes the tunnel with 1009. */
  maxPayload: number;
  /** How long the client gets to answer a close frame before its connection is cut. */
  closeTimeoutMs: number;
}

/** What the client's 101 says, and what becomes of a handshake `ws` refuses; read by `ws` while it accepts. */
export interface ClientAcceptance {
  readonly protocol: string | false;
  readonly headerLines: string[];
  /** The client's handshake was broken: nothing was answered yet, the caller refuses it. */
  refused(error: Error): void;
}

export class ClientSide {
  readonly #server: WebSocketServer;
  readonly #accepting = new WeakMap<IncomingMessage, ClientAcceptance>();

  constructor(options: ClientSideOptions) {
    const serverOptions: ServerOptions & { closeTimeout: number } = {
      noServer: true,
      clientTracking: false,
      perMessageDeflate: false,
      autoPong: false,
      maxPayload: options.maxPayload,
      closeTimeout: options.closeTimeoutMs,
      handleProtocols: (_offered, req) => this.#accepting.get(req)?.protocol ?? false,
    };
    this.#server = new WebSocketServer(serverOptions);
    this.#server.on('headers', (lines: string[], req: IncomingMessage) => {
      lines.push(...(this.#accepting.get(req)?.headerLines ?? []));
    });
    this.#server.on('wsClientError', (error: Error, _socket: Duplex, req: IncomingMessage) => {
      this.#accepting.get(req)?.refused(error);
    });
  }

  /**
   * Accepts the client's WebSocket on its upgrade request, now. Undefined
   * when it was not: its handshake refused (`acceptance.refused` was told) or
   * its socket gone.
   */
  accept(req: IncomingMessage, socket: Duplex, head: Buffer, acceptance: ClientAcceptance): WebSocket | undefined {
    // `ws` reads the acceptance, and reports a broken handshake, within handleUpgrade itself.
    this.#accepting.set(req, acceptance);
    let client = undefined as WebSocket | undefined;
    try {
      this.#server.handleUpgrade(req, socket, head, (accepted) => (client = accepted));
    } finally {
      this.#accepting.delete(req);
    }
    return client;
  }

  close(): void {
    this.#server.close();
  }
}

/** The upstream's 101 headers worth passing on (cookies, say), as header lines; `ws` writes the handshake's own. */
export function extraHeaderLines(headers: OutgoingHttpHeaders, requestId: string): string[] {
  const lines: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name.startsWith('sec-websocket-') || name === REQUEST_ID_HEADER) continue;
    for (const one of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${one}`);
  }
  lines.push(`${REQUEST_ID_HEADER}: ${requestId}`);
  return lines;
}
