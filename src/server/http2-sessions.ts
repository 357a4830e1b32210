// The HTTP/2 connections (sessions) of the public listener: how many of their streams a client may cancel, and how
// they end when the gateway stops.
//
// Invariants: streams the client cancelled before their answer was complete are counted per connection in a window,
// and past the bound the connection gets GOAWAY ENHANCE_YOUR_CALM (rapid reset, CVE-2023-44487); streams the gateway
// itself ends do not count. On stop each session is sent GOAWAY (open streams finish) and cut after the grace.
// Why: docs/decisions/0008-http2-rapid-reset-and-stopping.md
import { constants, type Http2SecureServer, type Http2Server, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { Server as HttpServer } from 'node:http';
import type { Logger } from 'pino';
import { isEndedByGateway } from './http2-request.js';

export interface ResetBounds {
  maxResetsPerWindow: number;
  resetWindowMs: number;
}

/** Sessions closed for too many resets, for the tests and the metrics. */
export interface Http2Refusals {
  rapidReset: number;
}

/** A server's HTTP/2 sessions, as its drain sees them. */
export interface Http2Sessions {
  readonly refusals: Http2Refusals;
  /** GOAWAY to every session: no new stream; those open finish. */
  closeIdle(): void;
  /** Every session cut. */
  closeAll(): void;
}

/** How long a connection told to go away (rapid reset) may take to close before it is cut. */
const GOAWAY_GRACE_MS = 1_000;

/** How often a refusal is logged at most: a flood must not become a flood of log lines. */
const WARN_INTERVAL_MS = 10_000;

export function guardHttp2Sessions(server: Http2SecureServer | Http2Server, bounds: ResetBounds, logger: Logger): Http2Sessions {
  const refusals: Http2Refusals = { rapidReset: 0 };
  const sessions = new Set<ServerHttp2Session>();
  let lastWarning = 0;

  server.on('session', (session: ServerHttp2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    let windowStart = 0;
    let resets = 0;
    const onAborted = (): void => {
      const now = Date.now();
      if (now - windowStart > bounds.resetWindowMs) {
        windowStart = now;
        resets = 0;
      }
      resets += 1;
      if (resets <= bounds.maxResetsPerWindow || session.destroyed) return;
      refusals.rapidReset += 1;
      if (now - lastWarning >= WARN_INTERVAL_MS) {
        lastWarning = now;
        const address = session.socket?.remoteAddress;
        logger.warn({ event: 'http2_rapid_reset', address, resets, windowMs: bounds.resetWindowMs }, 'HTTP/2 connection closed: too many cancelled streams');
      }
      // GOAWAY first, so the client learns why; no new stream is taken from now on, and the connection goes soon after.
      session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM);
      session.close();
      setTimeout(() => session.destroy(), GOAWAY_GRACE_MS).unref();
    };
    // Closed before both sides had ended (`aborted`), and not by the gateway: the client reset it. Read at
    // 'close', not on 'aborted': a stream opened and reset in one read is aborted before 'stream' is emitted.
    session.on('stream', (stream: ServerHttp2Stream) =>
      stream.once('close', () => {
        if (stream.aborted && !isEndedByGateway(stream)) onAborted();
      }),
    );
  });

  return {
    refusals,
    closeIdle() {
      for (const session of sessions) if (!session.closed && !session.destroyed) session.close();
    },
    closeAll() {
      for (const session of sessions) session.destroy();
    },
  };
}

/**
 * The drain's and Fastify's close of an allowHTTP1 TLS server: GOAWAY to every
 * session beside Node's own closing of idle HTTP/1.1 connections, and every
 * connection of either kind cut at the end of the grace.
 */
export function drainSessionsWithServer(server: Http2SecureServer, sessions: Http2Sessions): void {
  // Node's own (allowHTTP1) closes idle HTTP/1.1 connections; its types do not show it.
  const closable = server as unknown as { closeIdleConnections(): void; closeAllConnections(): void };
  const closeIdleHttp1 = closable.closeIdleConnections.bind(server);
  closable.closeIdleConnections = () => {
    closeIdleHttp1();
    sessions.closeIdle();
  };
  closable.closeAllConnections = () => {
    sessions.closeAll();
    // Node tracks the HTTP/1.1 connections of an allowHTTP1 server as its HTTP server does.
    HttpServer.prototype.closeAllConnections.call(server as unknown as HttpServer);
  };
}
