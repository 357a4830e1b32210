// The seam between the proxy's policy (routes, auth, headers) and the code
// that moves bytes to a backend and back. The policy side sees one promise
// per request: the response head and a body stream, or a GatehouseError.
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable, Writable } from 'node:stream';
import type { UpstreamTarget } from './upstream-pool.js';

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
}

export interface ResponseHead {
  statusCode: number;
  headers: IncomingHttpHeaders;
}

export interface UpstreamResponse extends ResponseHead {
  body: Readable;
}

export interface ForwardingEngine {
  readonly name: string;
  /**
   * Sends the request upstream, streaming its body. Rejects with a
   * GatehouseError (upstream_unreachable, upstream_unresolvable,
   * upstream_timeout) carrying the cause. When the client goes away first,
   * the upstream request is aborted at once.
   */
  forward(req: IncomingMessage, res: ServerResponse, options: ForwardOptions): Promise<UpstreamResponse>;
  /**
   * The faster path where an engine has one: the response body is written
   * straight into the Writable that `sink` returns for the response head (the
   * client's response itself, usually), with no stream in between. Resolves
   * when the body is complete; rejects as `forward` does.
   */
  forwardInto?(req: IncomingMessage, res: ServerResponse, options: ForwardOptions, sink: (head: ResponseHead) => Writable): Promise<void>;
  close(): void;
}
