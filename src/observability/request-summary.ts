// What one request was, once it is over: the one shape the access line, the
// request metrics and the exported span are all written from.
import type { TraceContext } from './trace-context.js';

export type RequestKind = 'proxy' | 'gateway' | 'websocket';

export interface RequestSummary {
  kind: RequestKind;
  requestId: string;
  trace: TraceContext;
  /** After `server.trustedProxies`. */
  clientAddress: string | undefined;
  method: string;
  /** The route's name (gateway endpoints: their path pattern); UNMATCHED_ROUTE when none matched. */
  route: string;
  /** The URL as the client sent it, credentials masked (redactUrl). */
  url: string;
  status: number;
  /** Request body bytes as declared (Content-Length), or counted where the gateway reads the body. */
  bytesIn: number;
  /** Bytes written to the client's connection for this response, head included. */
  bytesOut: number;
  durationMs: number;
  /** The upstream target that answered (proxied and WebSocket requests). */
  upstream?: string | undefined;
  /** From sending upstream to the response head; absent when nothing was sent upstream. */
  upstreamMs: number | undefined;
  subject: string | undefined;
  userAgent: string | undefined;
  /** The HTTP version the client spoke (`1.1`, `2.0`): h2 and HTTP/1.1 share the listener when TLS is on. */
  protocol?: string | undefined;
  /** WebSocket only: the handshake (`open`, status 101 or a refusal) or the tunnel's end (`close`). */
  event?: 'open' | 'close';
  /** Whether the response was sent whole (false: the client or upstream went away first). */
  completed: boolean;
}
