// The signed identity a backend can check instead of trusting headers: a short-lived JWT naming the caller, signed
// with the gateway's current signing key, verifiable from its JWKS like any token it signs.
//
// Invariants: kept per (session, audience, key id, lifetime) and used again only while at least half its life is
// left, and only for the same principal (or one with the same claims); a key rotation changes the key id, and with
// it the cache entry.
// Why: docs/decisions/0017-cached-identity-assertions.md
import { LRUCache } from 'lru-cache';
import type { Principal } from '../core/principal.js';
import { canonicalIssuer } from './issuer.js';
import { signCompactJws } from './compact-jws.js';
import type { KeySet } from './keyset.js';

/** The JOSE header's `typ`: not an access token's `JWT`, so no verifier takes one for the other (RFC 8725 3.11). */
export const ASSERTION_TYPE = 'gatehouse-assertion+jwt';

/** Sessions × routes with an assertion kept; past it the least recently used go (and are signed again when next needed). */
const DEFAULT_MAX_ENTRIES = 50_000;

export interface IdentityAssertionClaims {
  iss: string;
  aud: string;
  sub: string;
  preferred_username: string;
  sid: string;
  /** How the session began, as the gateway's own tokens say it (`pwd`, `api_key`). */
  amr: string[];
  roles: string[];
  /** The token's scopes, space-separated (RFC 8693 4.2); absent when it is not narrowed by scope. */
  scope?: string;
  /** RFC 7800 / RFC 9449: the DPoP key the caller proved it holds. */
  cnf?: { jkt: string };
  /** With several identity providers: the name of the one the caller came from. */
  idp?: string;
  iat: number;
  exp: number;
}

export interface IdentityAssertionOptions {
  keys: KeySet;
  /** `tokens.issuer`: the `iss` of every assertion, as of every token. */
  issuer: string;
  maxEntries?: number;
  /** Epoch ms; for tests. */
  now?: () => number;
}

interface Kept {
  token: string;
  principal: Principal;
  /** Epoch ms from which it is signed afresh: half its life gone. */
  renewAt: number;
}

export class IdentityAssertions {
  readonly #keys: KeySet;
  readonly #issuer: string;
  readonly #now: () => number;
  readonly #kept: LRUCache<string, Kept>;
  /** Assertions signed (not served from the cache): what a test and the bench read. */
  signed = 0;

  constructor(options: IdentityAssertionOptions) {
    this.#keys = options.keys;
    this.#issuer = canonicalIssuer(options.issuer);
    this.#now = options.now ?? Date.now;
    this.#kept = new LRUCache({ max: options.maxEntries ?? DEFAULT_MAX_ENTRIES });
  }

  /** The assertion for `principal` at a backend known as `audience`, valid `lifetimeS` seconds at most. */
  assertion(principal: Principal, audience: string, lifetimeS: number): string {
    const signingKey = this.#keys.signingKey();
    const key = `${principal.sid}\u0000${audience}\u0000${signingKey.kid}\u0000${lifetimeS}`;
    const now = this.#now();
    const kept = this.#kept.get(key);
    if (kept !== undefined && now < kept.renewAt && (kept.principal === principal || sameClaims(kept.principal, principal))) return kept.token;
    const iat = Math.floor(now / 1000);
    const claims: IdentityAssertionClaims = {
      iss: this.#issuer,
      aud: audience,
      sub: principal.sub,
      preferred_username: principal.username,
      sid: principal.sid,
      amr: [principal.method],
      roles: [...principal.roles],
      ...(principal.scopes !== undefined && { scope: principal.scopes.join(' ') }),
      ...(principal.confirmationThumbprint !== undefined && { cnf: { jkt: principal.confirmationThumbprint } }),
      ...(principal.provider !== undefined && { idp: principal.provider }),
      iat,
      exp: iat + lifetimeS,
    };
    const token = signCompactJws(signingKey, { typ: ASSERTION_TYPE }, claims);
    this.signed += 1;
    // Seconds are whole in the token: half of what it really has left, counted from its iat.
    this.#kept.set(key, { token, principal, renewAt: iat * 1000 + (lifetimeS * 1000) / 2 });
    return token;
  }
}

/** Whether two principals of one session would be asserted alike. */
function sameClaims(a: Principal, b: Principal): boolean {
  return (
    a.sub === b.sub &&
    a.username === b.username &&
    a.method === b.method &&
    a.confirmationThumbprint === b.confirmationThumbprint &&
    sameList(a.roles, b.roles) &&
    (a.scopes === b.scopes || (a.scopes !== undefined && b.scopes !== undefined && sameList(a.scopes, b.scopes)))
  );
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((item, i) => item === b[i]);
}
