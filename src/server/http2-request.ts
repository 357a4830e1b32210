// An HTTP/2 request made to look, to the code behind the listener, like the HTTP/1.1 one it was written for: `host`
// from `:authority`, pseudo-headers never sent upstream, no connection headers in the response, and a socket of its
// own (the peer as it was when the request arrived, TLS facts included, and a count of its response's body bytes),
// since the compatibility layer's `req.socket` is shared by every stream and reads undefined once the stream closed.
// The request and response classes are Node's own, subclassed, and given to every HTTP/2 server (`http2Classes`).
// Why: docs/decisions/0009-a-socket-of-its-own-for-each-http2-request.md
import type { IncomingHttpHeaders } from 'node:http';
import { Http2ServerRequest, Http2ServerResponse, type ServerHttp2Stream } from 'node:http2';
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
  readonly #stream: ServerHttp2Stream;
  /** Undefined for a stream already reset when its request is made (its session is detached from it). */
  readonly #connection: TLSSocket | undefined;

  constructor(stream: ServerHttp2Stream) {
    this.#stream = stream;
    const connection = stream.session?.socket as TLSSocket | undefined;
    this.#connection = connection;
    this.remoteAddress = connection?.remoteAddress;
    this.remotePort = connection?.remotePort;
    this.remoteFamily = connection?.remoteFamily;
    this.encrypted = connection?.encrypted === true;
    this.authorized = connection?.authorized === true;
  }

  get destroyed(): boolean {
    return this.#stream.destroyed;
  }

  /** Ends this stream only: the connection carries others. */
  destroy(): void {
    endedByGateway.add(this.#stream);
    this.#stream.destroy();
  }

  getPeerCertificate(detailed?: boolean): PeerCertificate | object {
    return this.#connection?.getPeerCertificate?.(detailed === true) ?? {};
  }

  getPeerX509Certificate(): X509Certificate | undefined {
    return this.#connection?.getPeerX509Certificate?.();
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

/**
 * The request class Node's HTTP/2 servers build for every stream (`http2Classes`): the peer taken when the stream
 * arrives, and the headers without pseudo-headers, computed once, on the prototype's own accessors. A subclass rather
 * than properties defined on each request, which cost a request a dictionary-mode object and six closures.
 */
export class GatewayHttp2Request extends Http2ServerRequest {
  readonly #peer: StreamPeer;
  #headers: IncomingHttpHeaders;

  constructor(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, options: unknown, rawHeaders: string[]) {
    super(stream, headers as never, options as never, rawHeaders);
    this.#peer = new StreamPeer(stream);
    this.#headers = withoutPseudoHeaders(headers);
  }

  // Accessors where Node's typings declare plain properties: defined once, on the prototype.
  static {
    Object.defineProperties(this.prototype, {
      socket: {
        get(this: GatewayHttp2Request) {
          return this.#peer;
        },
        configurable: true,
      },
      connection: {
        get(this: GatewayHttp2Request) {
          return this.#peer;
        },
        configurable: true,
      },
      headers: {
        get(this: GatewayHttp2Request) {
          return this.#headers;
        },
        // Node's request reads its method and URL through its own symbol, never through `headers`: a copy is safe.
        set(this: GatewayHttp2Request, value: IncomingHttpHeaders) {
          this.#headers = value;
        },
        configurable: true,
      },
    });
  }

  /** This stream's peer, whose `bytesWritten` the response counts. */
  get peer(): StreamPeer {
    return this.#peer;
  }
}

/**
 * The response class for every stream: `destroyed` as an HTTP/1.1 response has it, a `destroy()` marked as the
 * gateway's doing, no connection headers, and its body bytes counted on the request's peer.
 */
export class GatewayHttp2Response extends Http2ServerResponse<GatewayHttp2Request> {
  // `destroyed` as an HTTP/1.1 response has it, read everywhere to know whether the client is still there: whether
  // its stream is gone. An accessor where Node's typings declare a property: defined once, on the prototype.
  static {
    Object.defineProperty(this.prototype, 'destroyed', {
      get(this: GatewayHttp2Response) {
        return this.stream.destroyed;
      },
      configurable: true,
    });
  }

  override destroy(error?: Error): this {
    endedByGateway.add(this.stream);
    super.destroy(error);
    return this;
  }

  override writeHead(statusCode: number, reason?: unknown, headers?: unknown): this {
    const fields = typeof reason === 'object' && reason !== null ? reason : headers;
    if (typeof fields === 'object' && fields !== null && !Array.isArray(fields)) {
      const record = fields as Record<string, unknown>;
      for (const name of CONNECTION_SPECIFIC) if (record[name] !== undefined) delete record[name];
      if (record.te !== undefined && record.te !== 'trailers') delete record.te;
    }
    return (super.writeHead as (...args: unknown[]) => this)(statusCode, reason, headers);
  }

  override setHeader(name: string, value: number | string | readonly string[]): this {
    const lower = name.toLowerCase();
    if ((CONNECTION_SPECIFIC as readonly string[]).includes(lower) || (lower === 'te' && value !== 'trailers')) return this;
    super.setHeader(name, value);
    return this;
  }

  override write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    this.#peer().bytesWritten += byteLength(chunk, encoding);
    return (super.write as (...args: unknown[]) => boolean)(chunk, encoding, callback);
  }

  override end(chunk?: unknown, encoding?: unknown, callback?: unknown): this {
    this.#peer().bytesWritten += byteLength(chunk, encoding);
    return (super.end as (...args: unknown[]) => this)(chunk, encoding, callback);
  }

  #peer(): StreamPeer {
    return this.req.peer;
  }
}

/**
 * The classes every HTTP/2 server of the gateway is made with (`createSecureServer`, h2c's `createServer`). Typed as
 * Node's own: its typings tie a server's response class to its request class generically, which a pair of concrete
 * subclasses cannot meet, and nothing behind the listener needs to know it has the subclasses.
 */
export const http2Classes = { Http2ServerRequest: GatewayHttp2Request, Http2ServerResponse: GatewayHttp2Response } as unknown as {
  Http2ServerRequest: typeof Http2ServerRequest;
  Http2ServerResponse: typeof Http2ServerResponse;
};

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

function byteLength(chunk: unknown, encoding: unknown): number {
  if (typeof chunk === 'string') return Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  return chunk instanceof Uint8Array ? chunk.byteLength : 0;
}
