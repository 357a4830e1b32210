// Reads the bearer token of a request (RFC 6750 2.1). The check of the token
// itself belongs to the AuthService (gateway endpoints) or the proxy's cached
// verifier (hot path); both share this parsing and its errors.
import type { IncomingHttpHeaders } from 'node:http';
import { gatehouseError } from '../core/errors.js';

// b64token of RFC 6750, bounded so a giant header costs nothing to refuse;
// under the `Bearer` scheme or RFC 9449's `DPoP` (a bound token: its proof is
// checked by the bearer rule, bearer-authenticator.ts).
const BEARER = /^(?:Bearer|DPoP) +([A-Za-z0-9\-._~+/]{1,8192}=*) *$/i;

/** Whether an Authorization header that `bearerToken` read uses the `DPoP` scheme (its first letter tells: B or D). */
export function usesDpopScheme(headers: IncomingHttpHeaders): boolean {
  return ((headers.authorization?.charCodeAt(0) ?? 0) | 0x20) === 0x64; /* d */
}

/** Longest header BEARER accepts without padding: `Bearer ` and the bounded token. */
const PLAIN_BEARER_MAX = 'Bearer '.length + 8192;

/**
 * The token of `Bearer <token>` or `DPoP <token>` as nearly every client sends
 * it (that scheme, one space, nothing after), cut out without checking its
 * characters: only for looking the token up among those admitted before,
 * whose syntax was checked when they were first seen. Any other shape of
 * header: undefined.
 */
export function plainBearerToken(headers: IncomingHttpHeaders): string | undefined {
  const header = headers.authorization;
  if (header === undefined || header.length <= 7 || header.length > PLAIN_BEARER_MAX) return undefined;
  // Each letter's code with 0x20 set is its lower case: `bearer ` or `dpop ` in any case.
  const first = header.charCodeAt(0) | 0x20;
  if (first === 0x64 /* d */) {
    const dpop =
      (header.charCodeAt(1) | 0x20) === 0x70 &&
      (header.charCodeAt(2) | 0x20) === 0x6f &&
      (header.charCodeAt(3) | 0x20) === 0x70 &&
      header.charCodeAt(4) === 0x20;
    return dpop ? header.slice(5) : undefined;
  }
  const bearer =
    first === 0x62 &&
    (header.charCodeAt(1) | 0x20) === 0x65 &&
    (header.charCodeAt(2) | 0x20) === 0x61 &&
    (header.charCodeAt(3) | 0x20) === 0x72 &&
    (header.charCodeAt(4) | 0x20) === 0x65 &&
    (header.charCodeAt(5) | 0x20) === 0x72 &&
    header.charCodeAt(6) === 0x20;
  return bearer ? header.slice(7) : undefined;
}

export function bearerToken(headers: IncomingHttpHeaders): string {
  const header = headers.authorization;
  if (header === undefined || header === '') {
    throw gatehouseError('missing_bearer_token', { headers: { 'www-authenticate': bearerChallenge() } });
  }
  const match = BEARER.exec(header);
  if (!match) {
    const reason = 'Authorization header is not a bearer token';
    throw gatehouseError('invalid_bearer_token', { reason, headers: { 'www-authenticate': bearerChallenge(reason) } });
  }
  return match[1]!;
}

/** RFC 6750 3: the challenge sent with a 401 for a bearer token that was given. */
export function bearerChallenge(reason?: string): string {
  if (reason === undefined) return 'Bearer realm="gatehouse"';
  return `Bearer realm="gatehouse", error="invalid_token", error_description="${reason.replace(/["\\]/g, '')}"`;
}
