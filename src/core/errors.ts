// The one place that defines every error Gatehouse answers with: a stable code,
// the HTTP status, the `$message` shown to the client and the OAuth error code
// that goes into `$detail`. Nothing else in the code base invents a status or a
// client-facing message; it throws `gatehouseError(code, …)` and the error
// handler renders it.
import { STATUS_CODES } from 'node:http';

interface ErrorDefinition {
  readonly status: number;
  readonly message: string;
  readonly oauthError: string;
  /** The reason used when the thrower does not give a more precise one. */
  readonly reason: string;
}

const LOGIN_AGAIN = 'Please log in to carry out this action.';
const CHECK_AND_RETRY = 'The requested action cannot be carried out. Please check your settings and retry.';

// A table, one error a line so the catalogue reads down its codes and statuses: kept as written.
/* eslint-disable max-len */
// prettier-ignore
export const ERRORS = {
  // Spec 7: login failures.
  invalid_user_credentials: { status: 401, message: LOGIN_AGAIN, oauthError: 'invalid_grant', reason: 'invalid user credentials' },
  // Spec 7: refresh failures.
  invalid_refresh_token: { status: 400, message: CHECK_AND_RETRY, oauthError: 'invalid_grant', reason: 'invalid refresh token' },
  // A body, header or parameter the gateway cannot accept.
  invalid_request: { status: 400, message: 'The request is malformed.', oauthError: 'invalid_request', reason: 'malformed request' },
  // RFC 6750 3.1: no credentials at all carry no error code of their own; we still name one for `$detail`.
  missing_bearer_token: { status: 401, message: LOGIN_AGAIN, oauthError: 'invalid_token', reason: 'no bearer token was given' },
  invalid_bearer_token: { status: 401, message: LOGIN_AGAIN, oauthError: 'invalid_token', reason: 'invalid bearer token' },
  // RFC 9449: a DPoP proof refused where a resource was asked for (401, with the DPoP challenge) or tokens were (400, as at a token endpoint).
  invalid_dpop_proof: { status: 401, message: 'The proof of possession sent with the token is not valid. Please sign a new one and retry.', oauthError: 'invalid_dpop_proof', reason: 'invalid DPoP proof' },
  // RFC 9449 8: the proof lacks the server's current nonce; DPoP-Nonce names it (401 at a resource, 400 at a token request).
  use_dpop_nonce: { status: 401, message: 'The proof of possession needs the server nonce. Please sign a new one with it and retry.', oauthError: 'use_dpop_nonce', reason: 'the DPoP proof needs the server nonce' },
  dpop_nonce_required: { status: 400, message: 'The proof of possession needs the server nonce. Please sign a new one with it and retry.', oauthError: 'use_dpop_nonce', reason: 'the DPoP proof needs the server nonce' },
  dpop_proof_refused: { status: 400, message: 'The proof of possession sent with the request is not valid. Please sign a new one and retry.', oauthError: 'invalid_dpop_proof', reason: 'invalid DPoP proof' },
  // RFC 9470 3: the token is valid, but its login is too weak or too old for this route; the challenge says what would do.
  insufficient_user_authentication: { status: 401, message: 'Please log in again with a stronger or more recent authentication to do this.', oauthError: 'insufficient_user_authentication', reason: 'the login is too weak or too old for this' },
  insufficient_scope: { status: 403, message: 'You are not allowed to do this. Ask for the access you need.', oauthError: 'insufficient_scope', reason: 'the token does not grant this' },
  route_not_found: { status: 404, message: 'No service answers at this address.', oauthError: 'not_found', reason: 'no route matches the request' },
  method_not_allowed: { status: 405, message: 'This method is not allowed at this address.', oauthError: 'invalid_request', reason: 'method not allowed' },
  // A client too slow to send its request: it may not hold the gateway's connections (or an upstream's) for it.
  request_timeout: { status: 408, message: 'The request did not arrive in time.', oauthError: 'invalid_request', reason: 'the request did not arrive in time' },
  // A route's share of its upstream's connections is in use; the others stay free for other routes.
  route_busy: { status: 503, message: 'The service is busy. Please retry later.', oauthError: 'temporarily_unavailable', reason: 'too many requests in flight on this route' },
  payload_too_large: { status: 413, message: 'The request body is too large.', oauthError: 'invalid_request', reason: 'request body exceeds the limit' },
  request_not_found: { status: 404, message: 'No such request.', oauthError: 'not_found', reason: 'unknown request id' },
  invalid_service_credential: { status: 401, message: 'The service credential is missing or wrong.', oauthError: 'invalid_client', reason: 'invalid service credential' },
  status_transition_refused: { status: 409, message: 'The status cannot change this way.', oauthError: 'invalid_request', reason: 'status transition refused' },
  upstream_unreachable: { status: 502, message: 'The service behind the gateway cannot be reached. Please retry later.', oauthError: 'temporarily_unavailable', reason: 'upstream connection failed' },
  upstream_unresolvable: { status: 503, message: 'The service behind the gateway cannot be found. Please retry later.', oauthError: 'temporarily_unavailable', reason: 'upstream host name did not resolve' },
  upstream_timeout: { status: 504, message: 'The service behind the gateway did not answer in time. Please retry later.', oauthError: 'temporarily_unavailable', reason: 'upstream timed out' },
  // Login throttling and per-route limits: the client must wait (Retry-After says how long).
  too_many_requests: { status: 429, message: 'Too many requests. Please wait before you retry.', oauthError: 'slow_down', reason: 'too many requests' },
  // A route's quota (routes[].quotas) refused the caller: the reason names the limit and the tier; RateLimit and Retry-After say when.
  quota_exceeded: { status: 429, message: 'Your quota for this service is used up. Please wait before you retry.', oauthError: 'slow_down', reason: 'a quota of this route is used up' },
  store_unavailable: { status: 503, message: 'The service is temporarily unavailable. Please retry later.', oauthError: 'temporarily_unavailable', reason: 'state store unavailable' },
  // Readiness of a gateway that got a stop signal: load balancers take it out of rotation.
  shutting_down: { status: 503, message: 'The service is temporarily unavailable. Please retry later.', oauthError: 'temporarily_unavailable', reason: 'the gateway is stopping' },
  // Readiness of a gateway that cannot serve at all (server/readiness-checks.ts): no listener up, no keys held.
  not_ready: { status: 503, message: 'The service is temporarily unavailable. Please retry later.', oauthError: 'temporarily_unavailable', reason: 'the gateway cannot serve' },
  // Password hashing is bounded (limits/fair-work-queue.ts): this address already has as many logins waiting as it may.
  login_queue_full_for_address: { status: 429, message: 'Too many logins from this address are waiting. Please retry later.', oauthError: 'temporarily_unavailable', reason: 'too many logins waiting from this address' },
  // …and every address together has as many waiting as the gateway takes.
  login_queue_full: { status: 503, message: 'The service is busy. Please retry later.', oauthError: 'temporarily_unavailable', reason: 'too many logins waiting' },
  // Load shedding (limits/load-shedder.ts): the event loop is late, and this request's work waits for a calmer moment (Retry-After).
  overloaded: { status: 503, message: 'The service is busy. Please retry later.', oauthError: 'temporarily_unavailable', reason: 'the gateway is overloaded' },
  // A fronted OpenID Provider failed: never 401, the user's password is not the problem.
  // Several identity providers: a login named none of them.
  unknown_identity_provider: { status: 400, message: 'No identity provider has this name.', oauthError: 'invalid_request', reason: 'unknown identity provider' },
  identity_provider_unreachable: { status: 502, message: 'The identity provider cannot be reached. Please retry later.', oauthError: 'temporarily_unavailable', reason: 'identity provider unreachable' },
  identity_provider_invalid_response: { status: 502, message: 'The identity provider answered unexpectedly. Please retry later.', oauthError: 'temporarily_unavailable', reason: 'identity provider answered garbage' },
  identity_provider_not_ready: { status: 503, message: 'The service is temporarily unavailable. Please retry later.', oauthError: 'temporarily_unavailable', reason: 'the identity provider keys are not held yet' },
  identity_provider_timeout: { status: 504, message: 'The identity provider did not answer in time. Please retry later.', oauthError: 'temporarily_unavailable', reason: 'identity provider timed out' },
  reauthentication_required: { status: 403, message: 'Please log in again with your password to do this.', oauthError: 'insufficient_scope', reason: 'needs a password login from the last few minutes' },
  // Enrolling a second factor: the code does not match the secret shown (or was used already).
  one_time_code_refused: { status: 400, message: 'The code is not valid. Please enter the current code from your app.', oauthError: 'invalid_grant', reason: 'wrong or used one-time code' },
  // A passkey's answer refused: wrong origin, a challenge used or unknown, a bad signature, a counter gone back.
  passkey_refused: { status: 400, message: 'The passkey was not accepted. Please try again.', oauthError: 'invalid_grant', reason: 'passkey answer refused' },
  api_key_limit: { status: 409, message: 'You hold as many API keys as you may. Revoke one first.', oauthError: 'invalid_request', reason: 'too many API keys' },
  api_key_not_found: { status: 404, message: 'No such API key.', oauthError: 'not_found', reason: 'unknown API key' },
  api_key_managed_by_operator: { status: 403, message: 'This API key is managed by an operator. Ask them to revoke it.', oauthError: 'insufficient_scope', reason: 'an operator made the key' },
  session_not_found: { status: 404, message: 'No such session.', oauthError: 'not_found', reason: 'unknown session' },
  internal_error: { status: 500, message: 'An internal error occurred. Please retry later.', oauthError: 'server_error', reason: 'internal error' },
} as const satisfies Record<string, ErrorDefinition>;
/* eslint-enable max-len */

export type ErrorCode = keyof typeof ERRORS;

export interface GatehouseErrorOptions {
  /** A more precise, client-safe reason for `$detail` (never a secret). */
  reason?: string;
  /** Extra response headers, e.g. `WWW-Authenticate` or `Retry-After`. */
  headers?: Record<string, string>;
  cause?: unknown;
}

export class GatehouseError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly reason: string;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ErrorCode, options: GatehouseErrorOptions = {}) {
    const definition: ErrorDefinition = ERRORS[code];
    super(`${code}: ${options.reason ?? definition.reason}`, { cause: options.cause });
    this.name = 'GatehouseError';
    this.code = code;
    this.status = definition.status;
    this.reason = options.reason ?? definition.reason;
    this.headers = options.headers ?? {};
  }

  /** Server errors are not exposed: their detail goes to the log only. */
  get expose(): boolean {
    return this.status < 500;
  }

  get oauthError(): string {
    return ERRORS[this.code].oauthError;
  }

  get publicMessage(): string {
    return ERRORS[this.code].message;
  }

  /** `$detail`: the response code, its name, the OAuth error and the reason. */
  get detail(): string {
    const reason = this.expose ? this.reason : ERRORS[this.code].reason;
    return `${this.status} (${STATUS_CODES[this.status] ?? 'Error'}) - ${this.oauthError}: ${reason}`;
  }
}

export function gatehouseError(code: ErrorCode, options?: GatehouseErrorOptions): GatehouseError {
  return new GatehouseError(code, options);
}

export function isGatehouseError(value: unknown): value is GatehouseError {
  return value instanceof GatehouseError;
}
