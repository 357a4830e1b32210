// An HTTP/2 request made to look, to the code behind the listener, like the HTTP/1.1 one it was written for: `host`
// from `:authority`, pseudo-headers never sent upstream, no connection headers in the response, and a socket of its
// own (the peer as it was when the request arrived, TLS facts included, and a count of its response's body bytes),
// since the compatibility layer's `req.socket` is shared by every stream and reads undefined once the stream closed.
// Why: docs/decisions/0009-a-socket-of-its-own-for-each-http2-request.md
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { Http2ServerResponse, type Http2ServerRequest, type ServerHttp2Stream } from 'node:http2';
import type { X509Certificate } from 'node:crypto';
import type { PeerCertificate, TLSSocket } from 'node:tls';

/** What the code behind the listener reads of `req.socket`, fixed when the stream arrived. */
export class StreamPeer {
  readonly remoteAddress: string | undefined;
  readonly remotePort: number | undefined;
  readonly remoteFamily: string | undefined;
  readonly encrypted: boolean;
  /** Whether the client's certificate was verified (mTLS). */
  readonly authorized: boolean;
  /** The response body bytes written so far on this stream. */
  bytesWritten = 0;
  readonly #request: Http2ServerRequest;
  readonly #connection: TLSSocket;

  constructor(request: Http2ServerRequest) {
    this.#request = request;
    const connection = request.socket as unknown as TLSSocket;
    this.#connection = connection;
    this.remoteAddress = connection.remoteAddress;
    this.remotePort = connection.remotePort;
    this.remoteFamily = connection.remoteFamily;
    this.encrypted = connection.encrypted === true;
    this.authorized = connection.authorized === true;
  }

  get destroyed(): boolean {
    return this.#request.stream.destroyed;
  }

  /** Ends this stream only: the connection carries others. */
  destroy(): void {
    endedByGateway.add(this.#request.stream);
    this.#request.stream.destroy();
  }

  getPeerCertificate(detailed?: boolean): PeerCertificate | object {
    return this.#connection.getPeerCertificate?.(detailed === true) ?? {};
  }

  getPeerX509Certificate(): X509Certificate | undefined {
    return this.#connection.getPeerX509Certificate?.();
  }
}

/**
 * HTTP/1.1's connection-specific headers: forbidden in HTTP/2 (RFC 9113,
 * 8.2.2). Node drops `connection` from a response with a warning and throws on
 * the others; the code behind the listener sets `connection: close` on early
 * answers, which on h2 has no meaning (the stream ends; the connection stays).
 */
const CONNECTION_SPECIFIC = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'http2-settings'] as const;

/** Streams the gateway itself cut (an upload over its limit, a session's end): not the client's resets. */
const endedByGateway = new WeakSet<ServerHttp2Stream>();

/** Whether the gateway cut this stream itself (http2-sessions.ts counts only the client's resets). */
export function isEndedByGateway(stream: ServerHttp2Stream): boolean {
  return endedByGateway.has(stream);
}

/** `res.destroy()` marks its stream as the gateway's doing before it cuts it. */
function destroyStream(this: Http2ServerResponse, error?: Error): void {
  endedByGateway.add(this.stream);
  Http2ServerResponsePrototypeDestroy.call(this, error);
}

/** `res.destroyed`, as an HTTP/1.1 response has it: whether its stream is gone. */
const DESTROYED: PropertyDescriptor = {
  get(this: Http2ServerResponse): boolean {
    return this.stream.destroyed;
  },
  configurable: true,
};

/** Call first for every HTTP/2 request, before anything reads it. */
export function adaptHttp2Request(req: IncomingMessage, res: ServerResponse): void {
  const request = req as unknown as Http2ServerRequest;
  const peer = new StreamPeer(request);
  Object.defineProperty(req, 'socket', { value: peer, configurable: true });
  Object.defineProperty(req, 'connection', { value: peer, configurable: true });
  Object.defineProperty(req, 'headers', { value: withoutPseudoHeaders(request.headers), configurable: true, writable: true });
  const response = res as unknown as Http2ServerResponse;
  // Read everywhere to know whether the client is still there; Node's h2 response has no such property.
  Object.defineProperty(res, 'destroyed', DESTROYED);
  (res as unknown as { destroy: typeof destroyStream }).destroy = destroyStream;
  countBodyBytes(response, peer);
  dropConnectionHeaders(response);
}

/**
 * The request's headers without `:method`, `:path`, `:scheme` and
 * `:authority` (never forwarded: an upstream request has its own), with
 * `:authority` as `host` when the client sent no Host. A copy: Node's request
 * reads its method and URL from the original.
 */
function withoutPseudoHeaders(source: IncomingHttpHeaders): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = {};
  for (const name of Object.keys(source)) if (name.charCodeAt(0) !== 0x3a) headers[name] = source[name];
  if (headers.host === undefined && typeof source[':authority'] === 'string') headers.host = source[':authority'];
  return headers;
}

const Http2ServerResponsePrototypeDestroy = Http2ServerResponse.prototype.destroy;

type WriteHead = (statusCode: number, reason?: unknown, headers?: unknown) => Http2ServerResponse;
type SetHeader = (name: string, value: unknown) => Http2ServerResponse;

function dropConnectionHeaders(res: Http2ServerResponse): void {
  const writeHead = res.writeHead as unknown as WriteHead;
  const setHeader = res.setHeader as unknown as SetHeader;
  (res as unknown as { writeHead: WriteHead }).writeHead = function (statusCode, reason, headers) {
    const fields = typeof reason === 'object' && reason !== null ? reason : headers;
    if (typeof fields === 'object' && fields !== null && !Array.isArray(fields)) {
      const record = fields as Record<string, unknown>;
      for (const name of CONNECTION_SPECIFIC) if (record[name] !== undefined) delete record[name];
      if (record.te !== undefined && record.te !== 'trailers') delete record.te;
    }
    return writeHead.call(this, statusCode, reason, headers);
  };
  (res as unknown as { setHeader: SetHeader }).setHeader = function (this: Http2ServerResponse, name, value) {
    const lower = name.toLowerCase();
    if ((CONNECTION_SPECIFIC as readonly string[]).includes(lower) || (lower === 'te' && value !== 'trailers')) return this;
    return setHeader.call(this, name, value);
  };
}

type Write = (chunk: unknown, encoding?: unknown, callback?: unknown) => boolean;
type End = (chunk?: unknown, encoding?: unknown, callback?: unknown) => Http2ServerResponse;

function byteLength(chunk: unknown, encoding: unknown): number {
  if (typeof chunk === 'string') return Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  return chunk instanceof Uint8Array ? chunk.byteLength : 0;
}

function countBodyBytes(res: Http2ServerResponse, peer: StreamPeer): void {
  const write = res.write as unknown as Write;
  const end = res.end as unknown as End;
  (res as unknown as { write: Write }).write = function (chunk, encoding, callback) {
    peer.bytesWritten += byteLength(chunk, encoding);
    return write.call(this, chunk, encoding, callback);
  };
  (res as unknown as { end: End }).end = function (chunk, encoding, callback) {
    peer.bytesWritten += byteLength(chunk, encoding);
    return end.call(this, chunk, encoding, callback);
  };
}
