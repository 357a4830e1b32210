// Transport failures become gateway errors where they enter, with the cause
// kept for the log (reply-from's mapping): unreachable → 502, a name that does
// not resolve → 503, no answer in time → 504.
import { gatehouseError, isGatehouseError, type GatehouseError } from '../core/errors.js';

export const CONNECT_TIMEOUT = 'GATEHOUSE_UPSTREAM_CONNECT_TIMEOUT';
export const RESPONSE_TIMEOUT = 'GATEHOUSE_UPSTREAM_RESPONSE_TIMEOUT';

const UNRESOLVABLE = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA']);
const TIMEOUTS = new Set([CONNECT_TIMEOUT, RESPONSE_TIMEOUT, 'ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT']);
/** Failures that happened before anything reached the target: safe to try another one. */
const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', CONNECT_TIMEOUT, 'UND_ERR_CONNECT_TIMEOUT', ...UNRESOLVABLE]);

export class UpstreamTimeoutError extends Error {
  readonly code: string;
  constructor(code: typeof CONNECT_TIMEOUT | typeof RESPONSE_TIMEOUT, ms: number) {
    super(`${code === CONNECT_TIMEOUT ? 'connect' : 'response'} timeout after ${ms} ms`);
    this.code = code;
  }
}

/** The upstream request was abandoned: its client went away, or its body was cut off. */
export const ABANDONED = 'GATEHOUSE_UPSTREAM_REQUEST_ABANDONED';

export class AbandonedError extends Error {
  readonly code = ABANDONED;
}

export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export function isConnectFailure(error: unknown): boolean {
  const cause = isGatehouseError(error) ? error.cause : error;
  const code = errorCode(cause);
  return code !== undefined && CONNECT_FAILURES.has(code);
}

/**
 * OpenSSL's verification results as Node names them (X509_V_ERR_* without
 * the prefix): the upstream's certificate is untrusted, for another name,
 * expired, or otherwise unusable.
 */
const CERTIFICATE_FAILURES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'HOSTNAME_MISMATCH',
]);

/**
 * The TLS code of a failure to speak TLS with the upstream (its certificate
 * refused, the handshake or a TLS alert: `ERR_TLS_*`, `ERR_SSL_*`, as when a
 * backend refuses the gateway's client certificate); undefined for any other
 * failure. Looks through undici's wrappers to the socket's own error.
 */
export function tlsFailureCode(error: unknown): string | undefined {
  let current: unknown = isGatehouseError(error) ? error.cause : error;
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    const code = errorCode(current);
    if (code !== undefined && (CERTIFICATE_FAILURES.has(code) || code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_'))) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

const REFUSED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);
const RESET = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

/** How an upstream request failed, as metrics name it: a fixed set of kinds. */
export function upstreamFailureKind(error: unknown): 'refused' | 'reset' | 'timeout' | 'unresolvable' | 'bad_response' | 'other' {
  const code = errorCode(isGatehouseError(error) ? error.cause : error);
  if (code === undefined) return 'other';
  if (REFUSED.has(code)) return 'refused';
  if (RESET.has(code)) return 'reset';
  if (TIMEOUTS.has(code)) return 'timeout';
  if (UNRESOLVABLE.has(code)) return 'unresolvable';
  // llhttp's parse errors and undici's response checks: the upstream answered something that is not HTTP.
  if (code.startsWith('HPE_') || code.startsWith('UND_ERR_RES') || code === 'UND_ERR_INFO') return 'bad_response';
  return 'other';
}

export function upstreamError(error: unknown): GatehouseError {
  if (isGatehouseError(error)) return error;
  const code = errorCode(error);
  if (code && UNRESOLVABLE.has(code)) return gatehouseError('upstream_unresolvable', { cause: error });
  if (code && TIMEOUTS.has(code)) return gatehouseError('upstream_timeout', { cause: error });
  return gatehouseError('upstream_unreachable', { cause: error });
}
