// The first check of a bearer token when several providers are configured:
// the token's `iss` picks its provider by exact match (one map read), and only
// that provider's check runs (its keys, its introspection). A JWT naming no
// configured issuer, or signed with a key another provider holds and its own
// does not (key confusion), is refused before any call is made; an opaque
// token goes to the provider it came from (token-origins.ts), and one of no
// known origin is refused likewise. Cached tokens never reach here: the bearer
// rule's cache path is the same as with one provider.
// Why: docs/decisions/0025-several-identity-providers.md
import { decodeJwt, decodeProtectedHeader, type JWTPayload, type ProtectedHeaderParameters } from 'jose';
import type { TokenCheck } from '../auth/token-check.js';
import type { Principal } from '../core/principal.js';
import { TokenError, type TokenClaims } from '../tokens/types.js';
import type { TokenOrigins } from './token-origins.js';

/** What the dispatch needs of one provider. */
export interface IssuerEntry {
  name: string;
  /** Its tokens' `iss`, exactly as configured. */
  issuer: string;
  check: TokenCheck;
  /** Whether its key set, as held now, has this `kid` (no fetch). */
  holdsKey(kid: string): boolean;
}

export const UNKNOWN_ISSUER = 'token issuer is not a configured provider';
export const KEY_OF_ANOTHER_PROVIDER = "token signed with another provider's key";
export const UNKNOWN_ORIGIN = 'opaque token of no known provider';

export class IssuerTokenCheck implements TokenCheck {
  readonly #byIssuer: ReadonlyMap<string, IssuerEntry>;
  readonly #byName: ReadonlyMap<string, IssuerEntry>;
  readonly #origins: TokenOrigins;

  constructor(entries: readonly IssuerEntry[], origins: TokenOrigins) {
    this.#byIssuer = new Map(entries.map((entry) => [entry.issuer, entry]));
    this.#byName = new Map(entries.map((entry) => [entry.name, entry]));
    this.#origins = origins;
  }

  async check(token: string, verified?: TokenClaims): Promise<Principal> {
    return (await this.providerOf(token, verified)).check.check(token, verified);
  }

  /** The provider a token belongs to, or a TokenError saying why none does; reads no key set and calls nobody. */
  async providerOf(token: string, verified?: TokenClaims): Promise<IssuerEntry> {
    const jwt = verified === undefined ? peek(token) : { header: undefined, payload: { iss: verified.iss } };
    if (jwt === undefined) return this.#ofOrigin(await this.#origins.of(token));
    const { header, payload } = jwt;
    const entry = typeof payload.iss === 'string' ? this.#byIssuer.get(payload.iss) : undefined;
    if (entry === undefined) throw new TokenError(UNKNOWN_ISSUER);
    const kid = header?.kid;
    if (kid !== undefined && !entry.holdsKey(kid)) {
      for (const other of this.#byIssuer.values()) if (other !== entry && other.holdsKey(kid)) throw new TokenError(KEY_OF_ANOTHER_PROVIDER);
    }
    return entry;
  }

  #ofOrigin(name: string | undefined): IssuerEntry {
    const entry = name === undefined ? undefined : this.#byName.get(name);
    if (entry === undefined) throw new TokenError(UNKNOWN_ORIGIN);
    return entry;
  }
}

/** A JWS's header and claims, unverified; undefined for anything else (an opaque token). */
function peek(token: string): { header: ProtectedHeaderParameters; payload: JWTPayload } | undefined {
  try {
    return { header: decodeProtectedHeader(token), payload: decodeJwt(token) };
  } catch {
    return undefined;
  }
}
