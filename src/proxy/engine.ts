// The seam between the proxy's policy (routes, auth, headers) and the code
// that moves bytes to a backend and back. Production forwards with undici
// (engines/undici-engine.ts); the benchmark puts other engines behind the same
// seam to compare them on the real hot path (bench/engines/).
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable, Writable } from 'node:stream';
import type { UpstreamTarget } from './upstream-pool.js';
import type { UpstreamTls } from './upstream-tls.js';

export interface ForwardOptions {
  target: UpstreamTarget;
  /** The normalised, rewritten path with the client's query. */
  path: string;
  /** Exactly the headers to send (the header policy built them). */
  headers: OutgoingHttpHeaders;
  /** The request body to stream upstream; the client request itself, or a limiter in front of it. */
  body: Readable;
  connectTimeoutMs: number;
  /** Time allowed from sending the request to receiving the response head. */
  responseTimeoutMs: number;
  /** The route's TLS settings for an https:// target (CAs, SNI, client certificate, HTTP/2); absent: undici's defaults. */
  tls?: UpstreamTls | undefined;
}

export interface ResponseHead {
  statusCode: number;
  headers: IncomingHttpHeaders;
}

/** An upstream response with its body as a stream (what the 202 capture reads). */
export interface UpstreamResponse extends ResponseHead {
  body: Readable;
}

export interface ForwardingEngine {
  readonly name: string;
  /**
   * Sends the request upstream, streaming its body, and writes the response
   * body into the Writable that `sink` returns for the response head (the
   * client's response itself, usually), with no stream in between. Resolves
   * when the body is complete. Rejects with a GatehouseError
   * (upstream_unreachable, upstream_unresolvable, upstream_timeout) carrying
   * the cause, or with whatever `sink` threw. When the client goes away
   * first, the upstream request is aborted at once.
   */
  forward(req: IncomingMessage, res: ServerResponse, options: ForwardOptions, sink: (head: ResponseHead) => Writable): Promise<void>;
  /**
   * Gives up the upstream request of `res` at once, as if its client had
   * gone (its session ended: the gateway has answered or ended `res` itself).
   * Absent: the gateway destroys `res`, which the engine treats as the client leaving.
   */
  abandon?(res: ServerResponse): void;
  close(): void;
}
