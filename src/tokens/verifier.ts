// Checks a token the issuer made and turns every way it can be wrong into a
// TokenError with a reason a client may see. The token chooses nothing: the
// key comes from our key set by `kid`, the algorithm must be the one that key
// was made for, and the claims must be exactly the issuer's.
import { jwtVerify, type JWTHeaderParameters, type JWTPayload } from 'jose';
import type { AuthMethod } from '../store/store.js';
import { canonicalIssuer } from './issuer.js';
import type { KeySet } from './keyset.js';
import { TokenError, type TokenClaims, type TokenType } from './types.js';

export interface TokenVerifierOptions {
  keys: KeySet;
  issuer: string;
  audience: string;
  clockToleranceS: number;
  /** Epoch milliseconds; for tests of expiry. */
  now?: () => number;
}

/** Ours are well under 1 KiB; anything this large was not made by the issuer. */
export const MAX_TOKEN_LENGTH = 8 * 1024;

/** Three non-empty base64url segments: a compact JWS. An unsecured JWT (empty signature) is not one. */
const COMPACT_JWS = /^[\w-]+\.[\w-]+\.[\w-]+$/;

/**
 * Base64url has one spelling per byte string, but decoders (jose's too)
 * ignore the unused low bits of the last character: 16 spellings of one
 * EdDSA signature verify alike, and each would be cached as a token of its
 * own. Only the spelling the issuer wrote is accepted: a segment whose length
 * leaves 2 (or 3) characters in its last group must have the low 4 (or 2)
 * bits of the last one zero, and a length that leaves 1 encodes nothing.
 * `=`, `+` and `/` never pass COMPACT_JWS.
 */
function isCanonicalBase64Url(token: string, start: number, end: number): boolean {
  const rest = (end - start) % 4;
  if (rest === 0) return true;
  if (rest === 1) return false;
  return (base64UrlValue(token.charCodeAt(end - 1)) & (rest === 2 ? 0x0f : 0x03)) === 0;
}

function base64UrlValue(c: number): number {
  if (c >= 0x41 && c <= 0x5a) return c - 0x41; // A–Z
  if (c >= 0x61 && c <= 0x7a) return c - 0x47; // a–z
  if (c >= 0x30 && c <= 0x39) return c + 4; // 0–9
  return c === 0x2d ? 62 : 63; // - and _: nothing else passes COMPACT_JWS
}

/** Each of the three segments of a compact JWS (already known to match COMPACT_JWS) in its canonical spelling. */
function isCanonicalCompactJws(token: string): boolean {
  const first = token.indexOf('.');
  const second = token.indexOf('.', first + 1);
  return isCanonicalBase64Url(token, 0, first) && isCanonicalBase64Url(token, first + 1, second) && isCanonicalBase64Url(token, second + 1, token.length);
}

const REQUIRED_CLAIMS = ['iss', 'sub', 'aud', 'iat', 'exp', 'jti', 'typ', 'sid', 'preferred_username', 'amr'];

const AUTH_METHODS: ReadonlySet<unknown> = new Set<AuthMethod>(['pwd', 'api_key']);

export class TokenVerifier {
  readonly #keys: KeySet;
  readonly #issuer: string;
  readonly #audience: string;
  readonly #clockToleranceS: number;
  readonly #now: (() => number) | undefined;
  readonly #getKey: (header: JWTHeaderParameters) => ReturnType<KeySet['getVerificationKey']>;

  constructor(options: TokenVerifierOptions) {
    this.#keys = options.keys;
    this.#issuer = canonicalIssuer(options.issuer);
    this.#audience = options.audience;
    this.#clockToleranceS = options.clockToleranceS;
    this.#now = options.now;
    this.#getKey = (header) => this.#keys.getVerificationKey(header);
  }

  /** The token's claims when it is valid and its `typ` is one of `accept`; throws TokenError otherwise. */
  async verify(token: string, accept: readonly TokenType[]): Promise<TokenClaims> {
    if (typeof token !== 'string' || token.length > MAX_TOKEN_LENGTH || !COMPACT_JWS.test(token)) {
      throw new TokenError('malformed token');
    }
    // Before jose and before any cache sees it: one token, one spelling.
    if (!isCanonicalCompactJws(token)) throw new TokenError('token is not in canonical base64url');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.#getKey, {
        // Read per token: a rotation to another algorithm changes the list.
        algorithms: this.#keys.algorithms(),
        issuer: this.#issuer,
        audience: this.#audience,
        clockTolerance: this.#clockToleranceS,
        requiredClaims: REQUIRED_CLAIMS,
        ...(this.#now !== undefined && { currentDate: new Date(this.#now()) }),
      }));
    } catch (error) {
      throw tokenError(error);
    }
    return tokenClaims(payload, accept);
  }
}

/** jose's error, as a client-safe reason; jose's own message stays in `cause` for the log. */
function tokenError(error: unknown): TokenError {
  if (error instanceof TokenError) return error; // from the key set: unknown kid, alg of another key
  const { code, claim, reason } = (error ?? {}) as { code?: unknown; claim?: unknown; reason?: unknown };
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return new TokenError('token expired', { cause: error });
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return new TokenError('invalid signature', { cause: error });
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return new TokenError('algorithm not allowed', { cause: error });
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      // A missing or mistyped claim is a malformed token; a present but wrong one has its own reason.
      if (reason === 'check_failed') {
        if (claim === 'nbf') return new TokenError('token not yet valid', { cause: error });
        if (claim === 'iss') return new TokenError('wrong issuer', { cause: error });
        if (claim === 'aud') return new TokenError('wrong audience', { cause: error });
      }
      return new TokenError('malformed token', { cause: error });
    default:
      // ERR_JWS_INVALID, ERR_JWT_INVALID (bad JSON, bad header), ERR_JOSE_NOT_SUPPORTED (unknown `crit`)…
      return new TokenError('malformed token', { cause: error });
  }
}

/** The claims of TokenClaims, each of its type, and nothing else. */
function tokenClaims(payload: JWTPayload, accept: readonly TokenType[]): TokenClaims {
  const { iss, sub, aud, iat, exp, jti, typ, sid, preferred_username, amr } = payload;
  if (
    !isNonEmptyString(iss) ||
    !isNonEmptyString(sub) ||
    !isNonEmptyString(aud) ||
    !isNumericDate(iat) ||
    !isNumericDate(exp) ||
    !isNonEmptyString(jti) ||
    typeof typ !== 'string' ||
    !isNonEmptyString(sid) ||
    !isNonEmptyString(preferred_username) ||
    !isAmr(amr)
  ) {
    throw new TokenError('malformed token');
  }
  if (!(accept as readonly string[]).includes(typ)) throw new TokenError('wrong token type');
  return { iss, sub, aud, iat, exp, jti, typ: typ as TokenType, sid, preferred_username, amr };
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

function isNumericDate(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isAmr(value: unknown): value is AuthMethod[] {
  return Array.isArray(value) && value.length > 0 && value.every((method) => AUTH_METHODS.has(method));
}
