// The one writer of error responses. Whatever was thrown becomes a
// GatehouseError here, and a GatehouseError becomes its status, its headers
// and a `$diagnoses` body here, whichever way it leaves: a Fastify reply (the
// gateway's own endpoints, error-handler.ts), a node:http response (the
// proxy), or a raw socket (a refused WebSocket upgrade, a request Node's
// parser refused). The OAuth endpoints' error objects (RFC 6749 5.2) are
// rendered here too, with one header set. The adapters only carry it out.
import { STATUS_CODES, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError } from 'fastify';
import { diagnosticsJson } from '../core/diagnostics.js';
import { gatehouseError, isGatehouseError, type GatehouseError } from '../core/errors.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** Fastify's own 4xx errors, translated into client-safe reasons. */
const FASTIFY_REASONS: Record<string, string> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Content-Type must be application/json',
  FST_ERR_CTP_BODY_TOO_LARGE: 'request body is too large',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'the JSON body is empty',
  FST_ERR_CTP_INVALID_JSON_BODY: 'the body is not valid JSON',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'Content-Length does not match the body',
  FST_ERR_CTP_INVALID_TYPE: 'Content-Type header is malformed',
  FST_ERR_BAD_URL: 'the URL is malformed',
  FST_ERR_MAX_PARAM_LENGTH: 'a path segment is too long',
  FST_ERR_ASYNC_CONSTRAINT: 'the request cannot be routed',
};

/** Anything thrown, as the error the client is answered with: unknown failures are 500s whose cause goes to the log only. */
export function toGatehouseError(error: unknown): GatehouseError {
  if (isGatehouseError(error)) return error;
  const fastifyError = error as Partial<FastifyError> & { validation?: unknown };
  if (fastifyError?.validation) {
    return gatehouseError('invalid_request', { reason: fastifyError.message ?? 'the request does not match its schema', cause: error });
  }
  const code = fastifyError?.code;
  if (code && FASTIFY_REASONS[code]) {
    return gatehouseError('invalid_request', { reason: FASTIFY_REASONS[code], cause: error });
  }
  const status = fastifyError?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return gatehouseError('invalid_request', { cause: error });
  }
  return gatehouseError('internal_error', { cause: error });
}

export interface ErrorResponse {
  readonly status: number;
  /** The error's own headers (WWW-Authenticate, Retry-After…), then the body's, then X-Request-Id when given. */
  readonly headers: OutgoingHttpHeaders;
  readonly body: string;
}

/** The response an error becomes: the one place that decides its status, headers and body. */
export function renderError(error: GatehouseError, requestId?: string): ErrorResponse {
  const body = diagnosticsJson(error);
  const headers: OutgoingHttpHeaders = { ...error.headers, 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) };
  if (requestId !== undefined) headers['x-request-id'] = requestId;
  return { status: error.status, headers, body };
}

/** An OAuth error object (RFC 6749 5.2): what the token, introspection, revocation and back-channel logout endpoints answer. */
export interface OAuthErrorObject {
  readonly status: number;
  /** The RFC 6749 5.2 `error` code (`invalid_grant`, `invalid_client`…). */
  readonly error: string;
  readonly description: string;
  /** Kept from the gateway's error: a refusal's Retry-After or WWW-Authenticate still reaches the client. */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * RFC 6749 5.1 requires `Cache-Control: no-store` and `Pragma: no-cache` on the
 * token endpoint's answers; an error (5.2) is one of them, and the other OAuth
 * endpoints answer in its format: every OAuth error carries both.
 */
const OAUTH_NO_CACHE = { 'cache-control': 'no-store', pragma: 'no-cache' } as const;

/** A GatehouseError as an OAuth error object: its `oauthError` code and its reason. */
export function oauthErrorOf(error: GatehouseError): OAuthErrorObject {
  return { status: error.status, error: error.oauthError, description: error.reason, headers: error.headers };
}

/** The response an OAuth error becomes: `{error, error_description}`, never cached. */
export function renderOAuthError(error: OAuthErrorObject, requestId?: string): ErrorResponse {
  const body = JSON.stringify({ error: error.error, error_description: error.description });
  const headers: OutgoingHttpHeaders = { ...error.headers, ...OAUTH_NO_CACHE, 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) };
  if (requestId !== undefined) headers['x-request-id'] = requestId;
  return { status: error.status, headers, body };
}

/**
 * Answers a node:http response with the error. `closeConnection` when the
 * request body was not read: Node would otherwise drain it or stall the
 * connection for the next request.
 */
export function writeErrorResponse(res: ServerResponse, error: GatehouseError, requestId: string, closeConnection: boolean): void {
  writeRenderedError(res, renderError(error, requestId), closeConnection);
}

/** Answers a node:http response with an error already rendered (either format); `closeConnection` as above. */
export function writeRenderedError(res: ServerResponse, rendered: ErrorResponse, closeConnection: boolean): void {
  const headers = closeConnection ? { ...rendered.headers, connection: 'close' } : rendered.headers;
  res.writeHead(rendered.status, headers);
  res.end(rendered.body);
}

/** Answers a connection that no node:http response owns (an upgrade, an unparsable request), then closes it. */
export function writeErrorToSocket(socket: Duplex, error: GatehouseError, requestId?: string): void {
  if (socket.destroyed) return;
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const { status, headers, body } = renderError(error, requestId);
  headers.connection = 'close';
  socket.end(responseHead(status, headers) + body);
}

/** An HTTP/1.1 response head for a raw socket, blank line included; one line per value of a repeated header. */
export function responseHead(status: number, headers: OutgoingHttpHeaders): string {
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const one of value) head += `${name}: ${one}\r\n`;
    else head += `${name}: ${value}\r\n`;
  }
  return `${head}\r\n`;
}
