// Bearer checks of a fronted provider's JWT access tokens without a round
// trip: the signature is checked against the provider's key set (JWKS), which
// jose's remote key set keeps cached, refetches when a token names an unknown
// `kid` (at most once per cooldown, one fetch shared by concurrent callers),
// and bounds in time. When a refetch fails (the provider down), the last good
// keys still verify: a provider outage must not log everybody out. The
// claims the config names become the Identity.
import { createLocalJWKSet, createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { DEFAULT_OIDC_KEY_SET_REFETCH_COOLDOWN_S } from '../config/defaults.js';
import type { OidcIdentityConfig } from '../config/schema.js';
import { gatehouseError } from '../core/errors.js';
import type { Identity } from '../users/identity-provider.js';

export interface ProviderTokenVerifierOptions {
  issuer: string;
  jwksUri: string;
  settings: Pick<OidcIdentityConfig, 'audience' | 'claims' | 'timeoutMs'>;
  clockToleranceS: number;
  /** After a refetch, no other is made for this long, however many unknown `kid`s arrive (`identity.keySetRefetchCooldownS`; its default when absent). */
  cooldownMs?: number;
  /** How long a fetched key set is used before it is fetched again (jose's default: 10 minutes). */
  cacheMaxAgeMs?: number;
}

/** What a verified provider token says: who, until when, in which provider session, with which scopes. */
export interface VerifiedProviderToken {
  identity: Identity;
  expiresAtMs: number;
  /** When the provider issued it (`iat`): which of a session's tokens is the newest. */
  issuedAtMs?: number;
  /** The provider's session id (`claims.session`), when the token names one. */
  session?: string;
  /** The token's `scope`, split; undefined when it has none. */
  scopes?: string[];
  /** RFC 9449 6.1: the thumbprint of the key the provider bound the token to (`cnf.jkt`); its proof is asked for on every use. */
  confirmationThumbprint?: string;
  /** Every claim of the token as verified: route quotas key on them (`tenant`, `plan`, `azp`). */
  claims: Readonly<Record<string, unknown>>;
  /** The level the provider's login reached (`acr`), as it names it. */
  acr?: string;
  /** When the user last proved themselves at the provider (`auth_time`), epoch seconds. */
  authTimeS?: number;
}

export class ProviderTokenVerifier {
  readonly #keys: ReturnType<typeof createRemoteJWKSet>;
  readonly #options: ProviderTokenVerifierOptions;
  /** The remote set, falling back to the last keys it fetched when a refetch fails. */
  readonly #getKey: JWTVerifyGetKey;
  /** Called when a refetch failed and the last good keys were used instead. */
  onStaleKeys: ((error: unknown) => void) | undefined;

  constructor(options: ProviderTokenVerifierOptions) {
    this.#options = options;
    this.#keys = createRemoteJWKSet(new URL(options.jwksUri), {
      cooldownDuration: options.cooldownMs ?? DEFAULT_OIDC_KEY_SET_REFETCH_COOLDOWN_S * 1000,
      ...(options.cacheMaxAgeMs !== undefined && { cacheMaxAge: options.cacheMaxAgeMs }),
      timeoutDuration: options.settings.timeoutMs,
    });
    this.#getKey = async (header, token) => {
      try {
        return await this.#keys(header, token);
      } catch (error) {
        const lastGood = this.#keys.jwks();
        if (!isFetchFailure(error) || lastGood === undefined) throw error;
        this.onStaleKeys?.(error);
        return createLocalJWKSet(lastGood)(header, token);
      }
    };
  }

  /** Readiness: resolves once the first key set is held; a provider down answers 502/504. */
  async ready(): Promise<void> {
    try {
      await this.#keys.reload();
    } catch (error) {
      throw keySetFailure(error);
    }
  }

  /** The provider's keys as jose takes them (with the same refetch and fallback): what its logout tokens are verified with. */
  get keys(): JWTVerifyGetKey {
    return this.#getKey;
  }

  /** Whether the key set held now (nothing is fetched) has a key of this `kid`. */
  holdsKey(kid: string): boolean {
    return this.#keys.jwks()?.keys.some((key) => key.kid === kid) ?? false;
  }

  get hasKeys(): boolean {
    return this.#keys.jwks() !== undefined;
  }

  async verify(token: string): Promise<VerifiedProviderToken> {
    const { issuer, settings, clockToleranceS } = this.#options;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.#getKey, {
        issuer,
        clockTolerance: clockToleranceS,
        ...(settings.audience && { audience: settings.audience }),
      }));
    } catch (error) {
      if (error instanceof joseErrors.JOSEError && !isFetchFailure(error)) {
        throw gatehouseError('invalid_bearer_token', { reason: `provider token refused (${error.code})`, cause: error });
      }
      throw keySetFailure(error);
    }
    const session = payload[settings.claims.session];
    return {
      identity: toIdentity(payload, settings.claims),
      expiresAtMs: (payload.exp ?? 0) * 1000,
      ...(typeof payload.iat === 'number' && { issuedAtMs: payload.iat * 1000 }),
      ...(typeof session === 'string' && session !== '' && { session }),
      ...(typeof payload.scope === 'string' && { scopes: payload.scope.split(' ').filter(Boolean) }),
      ...confirmationOf(payload),
      claims: payload,
      ...(typeof payload.acr === 'string' && payload.acr !== '' && { acr: payload.acr }),
      ...(Number.isSafeInteger(payload.auth_time) && { authTimeS: payload.auth_time as number }),
    };
  }
}

/**
 * A DPoP binding the provider made (Keycloak's `cnf.jkt`); a `cnf` of another
 * kind (mTLS's `x5t#S256`) or a malformed one binds nothing we can check, so it is refused.
 */
function confirmationOf(payload: JWTPayload): { confirmationThumbprint?: string } {
  const cnf = payload.cnf;
  if (cnf === undefined) return {};
  const jkt = typeof cnf === 'object' && cnf !== null ? (cnf as { jkt?: unknown }).jkt : undefined;
  if (typeof jkt !== 'string' || !/^[\w-]{43}$/.test(jkt)) {
    throw gatehouseError('invalid_bearer_token', { reason: 'provider token is bound in a way the gateway cannot check' });
  }
  return { confirmationThumbprint: jkt };
}

/**
 * The key set could not be fetched (as opposed to a token no key verifies):
 * a timeout, a network failure, a non-200 answer or one that is not a key set
 * (jose reports the last two as its generic error).
 */
export function isFetchFailure(error: unknown): boolean {
  if (!(error instanceof joseErrors.JOSEError)) return true;
  return error instanceof joseErrors.JWKSTimeout || error instanceof joseErrors.JWKSInvalid || error.code === 'ERR_JOSE_GENERIC';
}

export function keySetFailure(error: unknown) {
  return gatehouseError(error instanceof joseErrors.JWKSTimeout ? 'identity_provider_timeout' : 'identity_provider_unreachable', {
    reason: 'the provider key set could not be fetched',
    cause: error,
  });
}

export function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

/** The configured claims as an Identity; a token without a subject is refused. */
export function toIdentity(payload: JWTPayload, claims: OidcIdentityConfig['claims']): Identity {
  if (typeof payload.sub !== 'string' || payload.sub === '') throw gatehouseError('invalid_bearer_token', { reason: 'provider token has no subject' });
  const username = payload[claims.username];
  return {
    sub: payload.sub,
    username: typeof username === 'string' && username !== '' ? username : payload.sub,
    method: 'pwd',
    roles: stringList(payload[claims.roles]),
    groups: stringList(payload[claims.groups]),
  };
}
