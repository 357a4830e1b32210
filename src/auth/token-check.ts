// How a token the bearer rule has not seen before is checked. The rule itself
// (caching, revocations, the user still being active: bearer-authenticator.ts)
// is the same for every identity mode; what differs is who signed the token
// and where its session lives. In local mode Gatehouse signed it and the store
// holds its session (below); a fronted OpenID Provider's tokens are checked
// against the provider's keys or its introspection (oidc/provider-token-check.ts).
import type { SessionRecord, SessionStore } from '../store/store.js';
import { storeUnavailable } from '../store/store-unavailable.js';
import type { TokenType } from '../core/vocabulary.js';
import { TokenError, type TokenClaims } from '../tokens/types.js';
import type { TokenVerifier } from '../tokens/verifier.js';
import type { Principal } from '../core/principal.js';

/**
 * A first check. Resolves with the token's principal; rejects with a
 * TokenError (the token is refused, for its reason), or with a GatehouseError
 * when the check itself could not be made (the store or the provider down).
 */
export interface TokenCheck {
  check(token: string, verified?: TokenClaims): Promise<Principal>;
}

export const SESSION_ENDED = 'session ended';

/** Spec 5.9: a refresh token is a bearer token too. */
const BEARER_TYPES: readonly TokenType[] = ['Bearer', 'Refresh'];
const NO_ROLES: readonly string[] = Object.freeze([]);

/** Local mode: a token Gatehouse signed, of a session the store still holds for the same user. */
export class SessionTokenCheck implements TokenCheck {
  readonly #verifier: TokenVerifier;
  readonly #store: SessionStore;
  readonly #provider: string | undefined;

  /** `provider`: the local provider's name among several, which its principals carry. */
  constructor(verifier: TokenVerifier, store: SessionStore, provider?: string) {
    this.#verifier = verifier;
    this.#store = store;
    this.#provider = provider;
  }

  /** `verified`: the token's claims when the caller has verified it already (refresh does). */
  async check(token: string, verified?: TokenClaims): Promise<Principal> {
    const claims = verified ?? (await this.#verifier.verify(token, BEARER_TYPES));
    let session: SessionRecord | null;
    try {
      session = await this.#store.getSession(claims.sid);
    } catch (error) {
      throw storeUnavailable(error);
    }
    if (session === null || session.sub !== claims.sub) throw new TokenError(SESSION_ENDED);
    // Frozen: every later cache hit hands out this very object.
    return Object.freeze({
      sub: claims.sub,
      username: claims.preferred_username,
      sid: claims.sid,
      tokenType: claims.typ,
      method: session.method,
      // Always present, undefined or not: one object shape for every principal keeps the hit path monomorphic.
      apiKeyId: session.apiKeyId,
      expiresAtMs: claims.exp * 1000,
      sessionStartedAtMs: session.createdAt,
      sessionEndsAtMs: session.expiresAt,
      acr: claims.acr,
      authTimeS: claims.auth_time,
      roles: claims.roles ?? NO_ROLES,
      scopes: claims.scope === undefined ? undefined : claims.scope.split(' ').filter(Boolean),
      readOnly: claims.ro === true,
      // Always present too (undefined for a plain bearer token), for the same one shape.
      confirmationThumbprint: claims.cnf?.jkt,
      provider: this.#provider,
      claims: claims as unknown as Readonly<Record<string, unknown>>,
    });
  }
}
