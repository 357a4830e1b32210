// The shapes of what the token issuer hands out and the verifier accepts.
import type { AuthMethodReference, TokenType } from '../core/vocabulary.js';

export interface TokenClaims {
  iss: string;
  sub: string;
  aud: string;
  iat: number;
  exp: number;
  jti: string;
  typ: TokenType;
  /** The login session; logout ends every token that carries it. */
  sid: string;
  preferred_username: string;
  /** How the login proved the user (RFC 8176): `pwd` or `api_key`, and any second factor (`otp`, `hwk`, `swk`, `user`). */
  amr: AuthMethodReference[];
  /** The level the login reached (OIDC Core 2, one of `tokens.acr`); absent on tokens signed before levels were. */
  acr?: string;
  /** When the user last proved themselves, epoch seconds (OIDC Core 2); a refresh keeps it. */
  auth_time?: number;
  /** The session's roles and groups when the token was signed (a scoped API key's: narrowed). */
  roles?: string[];
  groups?: string[];
  /** A scoped API key's scopes, space-separated (RFC 8693 4.2); absent: not narrowed by scope. */
  scope?: string;
  /** A read-only API key's session: safe methods only. */
  ro?: true;
  /** RFC 9449 6.1: the thumbprint of the key a DPoP-bound token is bound to; absent on a plain bearer token. */
  cnf?: { jkt: string };
}

/** Spec 2.1: the body of a successful login or refresh. */
export interface TokenSet {
  access_token: string;
  expires_in: number;
  refresh_expires_in: number;
  refresh_token: string;
  /** `DPoP` when the tokens are bound to the key of the request's proof (RFC 9449 5). */
  token_type: 'bearer' | 'DPoP';
}

/**
 * Why a token was refused. `reason` is safe to show a client (it never holds
 * the token or key material); `cause` keeps the jose error for the log.
 */
export class TokenError extends Error {
  readonly reason: string;
  /**
   * The token bears our valid signature: it was issued here, and refused for
   * what became of it (expired, its session ended, another type). Nobody
   * guesses such a token, so the login throttle does not count it.
   */
  readonly wellSigned: boolean;

  constructor(reason: string, options?: { cause?: unknown; wellSigned?: boolean }) {
    super(reason, options);
    this.name = 'TokenError';
    this.reason = reason;
    this.wellSigned = options?.wellSigned ?? false;
  }

  /** The same refusal, known to be of a token that bears our valid signature. */
  ofWellSignedToken(): TokenError {
    return this.wellSigned ? this : new TokenError(this.reason, { cause: this.cause, wellSigned: true });
  }
}

/** Whether `error`, or an error it was caused by, refuses a token that bears our valid signature. */
export function refusesWellSignedToken(error: unknown): boolean {
  for (let at = error, depth = 0; at instanceof Error && depth < 4; at = at.cause, depth += 1) {
    if (at instanceof TokenError) return at.wellSigned;
  }
  return false;
}
