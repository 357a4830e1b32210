// Checks a token the issuer made and turns every way it can be wrong into a
// TokenError with a reason a client may see. The token chooses nothing: the
// key comes from our key set by `kid`, the algorithm must be the one that key
// was made for, and the claims must be exactly the issuer's.
//
// The steps and their order are jose's jwtVerify (RFC 7515 5.2, RFC 7519
// 7.2), but the signature is checked with node:crypto's synchronous verify:
// jose's runs on WebCrypto, whose work queues on libuv's four threads behind
// password hashing and DNS lookups, so a flood of garbage logins delayed the
// first use of every new token by seconds. On the event loop it costs the
// same few tens of µs and waits for nothing (bench/flood.ts measures both).
import { verify as verifySignature } from 'node:crypto';
import type { JWTHeaderParameters } from 'jose';
import type { SigningAlgorithm } from '../config/schema.js';
import { AUTH_METHOD_REFERENCES, type AuthMethodReference, type TokenType } from '../core/vocabulary.js';
import { canonicalIssuer } from './issuer.js';
import { keyObjectOf } from './key-material.js';
import type { KeySet } from './keyset.js';
import { TokenError, type TokenClaims } from './types.js';

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

const AUTH_METHODS: ReadonlySet<unknown> = new Set<AuthMethodReference>(AUTH_METHOD_REFERENCES);

export class TokenVerifier {
  readonly #keys: KeySet;
  readonly #issuer: string;
  readonly #audience: string;
  readonly #clockToleranceS: number;
  readonly #now: () => number;

  constructor(options: TokenVerifierOptions) {
    this.#keys = options.keys;
    this.#issuer = canonicalIssuer(options.issuer);
    this.#audience = options.audience;
    this.#clockToleranceS = options.clockToleranceS;
    this.#now = options.now ?? Date.now;
  }

  /** The token's claims when it is valid and its `typ` is one of `accept`; throws TokenError otherwise. */
  async verify(token: string, accept: readonly TokenType[]): Promise<TokenClaims> {
    if (typeof token !== 'string' || token.length > MAX_TOKEN_LENGTH || !COMPACT_JWS.test(token)) {
      throw new TokenError('malformed token');
    }
    // Before anything else and before any cache sees it: one token, one spelling.
    if (!isCanonicalCompactJws(token)) throw new TokenError('token is not in canonical base64url');
    const first = token.indexOf('.');
    const second = token.indexOf('.', first + 1);
    const header = decodeSegment(token, 0, first);
    // No extension is understood, so none may be critical (RFC 7515 4.1.11); `b64` only counts when it is.
    if (header === null || header.crit !== undefined) throw new TokenError('malformed token');
    const { alg } = header;
    if (typeof alg !== 'string') throw new TokenError('malformed token');
    // Read per token: a rotation to another algorithm changes the list.
    if (!(this.#keys.algorithms() as readonly string[]).includes(alg)) throw new TokenError('algorithm not allowed');
    // Unknown kid, or a kid of a key made for another algorithm: TokenError from the key set.
    const key = keyObjectOf(await this.#keys.getVerificationKey(header as JWTHeaderParameters));
    const signature = Buffer.from(token.slice(second + 1), 'base64url');
    const signed = Buffer.from(token.slice(0, second), 'latin1'); // base64url and `.`: ASCII
    if (!signatureMatches(alg as SigningAlgorithm, signed, key, signature)) throw new TokenError('invalid signature');
    try {
      const payload = decodeSegment(token, first + 1, second);
      if (payload === null) throw new TokenError('malformed token');
      this.#checkClaims(payload);
      return tokenClaims(payload, accept);
    } catch (error) {
      // Past the signature: a token of ours, expired or used where it does not belong, never a guess.
      throw error instanceof TokenError ? error.ofWellSignedToken() : error;
    }
  }

  /** jose's validateClaimsSet for the claims we require: presence, then iss, aud, iat, nbf, exp. */
  #checkClaims(payload: Record<string, unknown>): void {
    for (const claim of REQUIRED_CLAIMS) {
      if (!Object.hasOwn(payload, claim)) throw new TokenError('malformed token');
    }
    if (payload.iss !== this.#issuer) throw new TokenError('wrong issuer');
    const { aud } = payload;
    if (aud !== this.#audience && !(Array.isArray(aud) && aud.includes(this.#audience))) throw new TokenError('wrong audience');
    if (typeof payload.iat !== 'number') throw new TokenError('malformed token');
    const nowS = Math.floor(this.#now() / 1000);
    const { nbf, exp } = payload;
    if (nbf !== undefined) {
      if (typeof nbf !== 'number') throw new TokenError('malformed token');
      if (nbf > nowS + this.#clockToleranceS) throw new TokenError('token not yet valid');
    }
    if (typeof exp !== 'number') throw new TokenError('malformed token');
    if (exp <= nowS - this.#clockToleranceS) throw new TokenError('token expired');
  }
}

/** Signature lengths fixed by the algorithm; anything else is refused before node:crypto sees it. */
const SIGNATURE_BYTES: Partial<Record<SigningAlgorithm, number>> = { EdDSA: 64, ES256: 64 };

function signatureMatches(alg: SigningAlgorithm, signed: Buffer, key: ReturnType<typeof keyObjectOf>, signature: Buffer): boolean {
  const expectedBytes = SIGNATURE_BYTES[alg];
  if (expectedBytes !== undefined && signature.length !== expectedBytes) return false;
  try {
    // JWS (RFC 7518 3.4) signs ES256 as r ‖ s, not DER; the option is ignored for the other key types.
    return verifySignature(alg === 'EdDSA' ? null : 'sha256', signed, { key, dsaEncoding: 'ieee-p1363' }, signature);
  } catch {
    return false; // a key of the wrong type for the data, a malformed signature
  }
}

/** A segment's JSON object; null when it is not base64url of a JSON object. */
function decodeSegment(token: string, start: number, end: number): Record<string, unknown> | null {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(token.slice(start, end), 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** The claims of TokenClaims, each of its type, and nothing else. */
function tokenClaims(payload: Record<string, unknown>, accept: readonly TokenType[]): TokenClaims {
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
  const { roles, groups, scope, ro, cnf, acr, auth_time } = payload;
  if (
    (acr !== undefined && !isNonEmptyString(acr)) ||
    (auth_time !== undefined && !isNumericDate(auth_time)) ||
    (roles !== undefined && !isNameList(roles)) ||
    (groups !== undefined && !isNameList(groups)) ||
    (scope !== undefined && typeof scope !== 'string') ||
    (ro !== undefined && ro !== true) ||
    (cnf !== undefined && !isConfirmation(cnf))
  ) {
    throw new TokenError('malformed token');
  }
  return {
    iss,
    sub,
    aud,
    iat,
    exp,
    jti,
    typ: typ as TokenType,
    sid,
    preferred_username,
    amr,
    ...(acr !== undefined && { acr }),
    ...(auth_time !== undefined && { auth_time }),
    ...(roles !== undefined && { roles }),
    ...(groups !== undefined && { groups }),
    ...(scope !== undefined && { scope }),
    ...(ro !== undefined && { ro }),
    ...(cnf !== undefined && { cnf: { jkt: cnf.jkt } }),
  };
}

/** RFC 9449 6.1: `cnf` with a `jkt` (a base64url SHA-256 thumbprint); a confirmation of any other kind is not one we issue. */
function isConfirmation(value: unknown): value is { jkt: string } {
  return (
    typeof value === 'object' && value !== null && typeof (value as { jkt?: unknown }).jkt === 'string' && /^[\w-]{43}$/.test((value as { jkt: string }).jkt)
  );
}

function isNameList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

function isNumericDate(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isAmr(value: unknown): value is AuthMethodReference[] {
  return Array.isArray(value) && value.length > 0 && value.every((method) => AUTH_METHODS.has(method));
}
