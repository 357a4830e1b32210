// The first check of a fronted provider's token (the bearer rule itself is
// auth/bearer-authenticator.ts's). Access tokens are JWTs the provider signs
// with the keys it publishes: verified here, no round trip. Refresh tokens
// (spec 5.9 makes them bearer tokens too) are opaque or signed with a secret
// only the provider holds (Keycloak: HS512), so only its introspection
// endpoint can tell; the answer is cached in the store for at most the
// configured interval (introspection-cache.ts), and an introspected token is
// trusted no longer than that, so a revocation at the provider is seen within
// it. Either kind is refused once its session was ended here (a logout).
// Both carry the roles of their provider session as last seen
// (session-roles.ts), so the route rules treat every token of a session alike;
// an access token's `acr` and `auth_time` are the provider's (step-up).
import { createHash } from 'node:crypto';
import { decodeProtectedHeader } from 'jose';
import type { Principal } from '../core/principal.js';
import { SESSION_ENDED, type TokenCheck } from '../auth/token-check.js';
import type { OidcIdentityConfig } from '../config/schema.js';
import type { IntrospectionStore, ProviderSessionStore } from '../store/store.js';
import { storeUnavailable } from '../store/store-unavailable.js';
import { TokenError } from '../tokens/types.js';
import { fromIntrospection, IntrospectionCache } from './introspection-cache.js';
import type { ProviderConnection } from './provider-connection.js';
import type { SessionRoles } from './session-roles.js';

export interface ProviderTokenCheckOptions {
  connection: ProviderConnection;
  store: ProviderSessionStore & IntrospectionStore;
  settings: OidcIdentityConfig;
  /** The roles of each provider session, as its newest token says. */
  sessionRoles: SessionRoles;
  now?: () => number;
  /**
   * Among several providers, this one's name: its principals carry it, and its
   * session ids are prefixed with it, so no provider can name (and end) another's session.
   */
  provider?: string;
}

const NOT_ACTIVE = 'token not active at the provider';

export class ProviderTokenCheck implements TokenCheck {
  readonly #connection: ProviderConnection;
  readonly #store: ProviderSessionStore;
  readonly #intervalMs: number;
  readonly #introspection: IntrospectionCache;
  readonly #now: () => number;
  readonly #sessionRoles: SessionRoles;
  readonly #provider: string | undefined;
  readonly #sessionPrefix: string;

  constructor(options: ProviderTokenCheckOptions) {
    const { connection, settings } = options;
    this.#provider = options.provider;
    this.#sessionPrefix = providerSessionPrefix(options.provider);
    this.#connection = connection;
    this.#store = options.store;
    this.#now = options.now ?? Date.now;
    this.#sessionRoles = options.sessionRoles;
    this.#intervalMs = settings.introspectionIntervalS * 1000;
    this.#introspection = new IntrospectionCache({
      store: options.store,
      intervalMs: this.#intervalMs,
      maxEntries: settings.introspectionCacheMaxEntries,
      now: this.#now,
      introspect: async (token) => {
        const { client } = await connection.connect();
        return fromIntrospection((await client.introspect(token)) as Record<string, unknown> | null, settings.claims);
      },
    });
  }

  async check(token: string): Promise<Principal> {
    const principal = signedWithPublishedKey(token) ? await this.#verifyAccessToken(token) : await this.#introspect(token);
    let ended: boolean;
    try {
      ended =
        (await this.#store.providerSessionEnded(principal.sid)) ||
        (principal.sid !== tokenSessionId(token) && (await this.#store.providerSessionEnded(tokenSessionId(token))));
    } catch (error) {
      throw storeUnavailable(error);
    }
    if (ended) throw new TokenError(SESSION_ENDED);
    return principal;
  }

  async #verifyAccessToken(token: string): Promise<Principal> {
    const { verifier } = await this.#connection.connect();
    const verified = await verifier.verify(token);
    const { identity } = verified;
    const session = verified.session === undefined ? undefined : this.#sessionPrefix + verified.session;
    // A token that names no provider session is its own: its roles are its own.
    const roles =
      session === undefined
        ? identity.roles
        : await this.#stored(() => this.#sessionRoles.settle(session, identity.sub, { roles: identity.roles ?? [], issuedAtMs: verified.issuedAtMs ?? 0 }));
    return principal({
      provider: this.#provider,
      sid: session ?? tokenSessionId(token),
      tokenType: 'Bearer',
      identity: { ...identity, roles },
      expiresAtMs: verified.expiresAtMs,
      scopes: verified.scopes,
      confirmationThumbprint: verified.confirmationThumbprint,
      claims: verified.claims,
      acr: verified.acr,
      authTimeS: verified.authTimeS,
    });
  }

  async #introspect(token: string): Promise<Principal> {
    const answer = await this.#introspection.lookup(token);
    if (!answer.active || answer.sub === undefined) throw new TokenError(NOT_ACTIVE);
    const sub = answer.sub;
    // Trusted for the interval at most: the cached check must not outlive what the provider said.
    const trustedUntilMs = Math.min(answer.exp === undefined ? Infinity : answer.exp * 1000, this.#now() + this.#intervalMs);
    // Most providers name no roles here: the session's, as its newest access token said, stand in.
    const observed = answer.roles === undefined ? undefined : { roles: answer.roles, issuedAtMs: (answer.iat ?? 0) * 1000 };
    const session = answer.session === undefined ? undefined : this.#sessionPrefix + answer.session;
    const roles =
      session === undefined ? (answer.roles ?? []) : await this.#stored(() => this.#sessionRoles.settle(session, sub, observed, answer.roles ?? []));
    return principal({
      provider: this.#provider,
      sid: session ?? tokenSessionId(token),
      tokenType: 'Refresh',
      identity: { sub, username: answer.username ?? sub, roles },
      expiresAtMs: trustedUntilMs,
      scopes: answer.scope?.split(' ').filter(Boolean),
    });
  }

  async #stored<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw storeUnavailable(error);
    }
  }
}

/**
 * A token's own session id: what a logout ends when the provider names no
 * session. A digest, so that neither the store nor the revocation feed ever
 * carries a credential.
 */
export function tokenSessionId(token: string): string {
  return `token:${createHash('sha256').update(token).digest('base64url')}`;
}

/** How the sessions of the provider of this name are told apart from other providers' (none with one provider). */
export function providerSessionPrefix(provider: string | undefined): string {
  return provider === undefined ? '' : `${provider}:`;
}

/** A JWS signed with an asymmetric key: one the provider's key set can verify. Anything else goes to introspection. */
function signedWithPublishedKey(token: string): boolean {
  try {
    const { alg } = decodeProtectedHeader(token);
    return typeof alg === 'string' && !alg.startsWith('HS') && alg !== 'none';
  } catch {
    return false;
  }
}

interface PrincipalParts {
  provider: string | undefined;
  /** The token's claims when it was verified here (a JWT); undefined for an introspected one. */
  claims?: Readonly<Record<string, unknown>> | undefined;
  sid: string;
  tokenType: Principal['tokenType'];
  identity: { sub: string; username: string; roles?: readonly string[] | undefined };
  expiresAtMs: number;
  scopes: string[] | undefined;
  /** A DPoP-bound access token's key (`cnf.jkt`): the bearer rule asks for its proof. */
  confirmationThumbprint?: string | undefined;
  /** The provider's `acr` and `auth_time` (access tokens; an introspected refresh token names neither here). */
  acr?: string | undefined;
  authTimeS?: number | undefined;
}

function principal({ provider, sid, tokenType, identity, expiresAtMs, scopes, confirmationThumbprint, claims, acr, authTimeS }: PrincipalParts): Principal {
  // The same shape as a local principal (token-check.ts), frozen likewise.
  return Object.freeze({
    sub: identity.sub,
    username: identity.username,
    sid,
    tokenType,
    // The provider checked the credentials; whether a password or a key, it does not say.
    method: 'pwd' as const,
    apiKeyId: undefined,
    expiresAtMs,
    sessionStartedAtMs: undefined,
    // The provider's session end is not known here: no tunnel outlives the token it was opened with.
    sessionEndsAtMs: expiresAtMs,
    acr,
    authTimeS,
    roles: identity.roles ?? [],
    scopes,
    readOnly: false,
    confirmationThumbprint,
    provider,
    claims,
  });
}
