// Who the users are (the local users file or a fronted OpenID Provider) and
// the tokens Gatehouse signs: their part of the config schema.
import { z } from 'zod';
import { isWellFormedPasswordHash } from '../core/password-hash-format.js';
import * as d from './defaults.js';
import { httpUrl, nonNegativeInt, positiveInt } from './schema-primitives.js';

export const LocalIdentitySchema = z.strictObject({
  provider: z.literal('local'),
  /** The YAML users file that `gatehouse users …` and `gatehouse apikeys …` manage. */
  usersFile: z.string().min(1),
  /** Pick up edits of the users file without a restart. */
  watch: z.boolean().default(true),
});

/**
 * An OpenID Provider that Gatehouse fronts (`identity.provider: oidc`): login
 * and refresh go to its token endpoint, bearer tokens are checked against its
 * keys (access tokens) or its introspection (refresh tokens, spec 5.9).
 */
export const OidcIdentitySchema = z.strictObject({
  provider: z.literal('oidc'),
  /** Discovery is read from `<issuer>/.well-known/openid-configuration`. */
  issuer: httpUrl,
  clientId: z.string().min(1),
  /** How Gatehouse authenticates at the token endpoint (RFC 6749 2.3, OIDC Core 9). */
  clientAuth: z.enum(['client_secret_basic', 'client_secret_post', 'private_key_jwt']).default('client_secret_basic'),
  /** For client_secret_basic and client_secret_post (env GATEHOUSE_OIDC_CLIENT_SECRET). */
  clientSecret: z.string().min(1).optional(),
  /** For private_key_jwt: the client's private key, a PKCS#8 PEM file (its public key registered at the provider). */
  privateKeyFile: z.string().min(1).optional(),
  privateKeyAlgorithm: z.enum(['RS256', 'ES256', 'EdDSA']).default('RS256'),
  /** The `kid` the provider knows the key by, when it needs one to pick the key. */
  privateKeyId: z.string().min(1).optional(),
  scopes: z.array(z.string().min(1)).default(['openid']),
  /** The audience (resource indicator) access tokens must carry. */
  audience: z.string().min(1).optional(),
  /** Which claims carry the login name, the roles and the groups. */
  claims: z.strictObject({
    username: z.string().min(1).default('preferred_username'),
    roles: z.string().min(1).default('roles'),
    groups: z.string().min(1).default('groups'),
    /**
     * The provider's session id (Keycloak's `sid`, in every token of a login):
     * a logout at the gateway ends every token naming it. A token without it
     * is its own session.
     */
    session: z.string().min(1).default('sid'),
  }).prefault({}),
  /** `refresh_expires_in` to answer when the provider leaves it out (its refresh-token lifetime, in seconds). */
  refreshTokenTtlS: positiveInt.default(d.DEFAULT_REFRESH_TOKEN_TTL_S),
  /** A refresh token used as a bearer is introspected at the provider at most once per this many seconds, across all instances. */
  introspectionIntervalS: positiveInt.default(d.DEFAULT_OIDC_INTROSPECTION_INTERVAL_S),
  /** Bound of the introspection answers kept in memory when the store is in memory (Redis bounds them by their expiry). */
  introspectionCacheMaxEntries: positiveInt.default(d.DEFAULT_TOKEN_CACHE_MAX_ENTRIES),
  /** How long one call to the provider may take before login answers 504. */
  timeoutMs: positiveInt.default(d.DEFAULT_OIDC_TIMEOUT_MS),
  /**
   * A token signed with a key the gateway does not hold makes it fetch the
   * provider's key set again (a rotation), at most once per this many seconds
   * however many such tokens arrive.
   */
  keySetRefetchCooldownS: nonNegativeInt.default(d.DEFAULT_OIDC_KEY_SET_REFETCH_COOLDOWN_S),
});
export type OidcIdentityConfig = z.infer<typeof OidcIdentitySchema>;

export const IdentitySchema = z.discriminatedUnion('provider', [LocalIdentitySchema, OidcIdentitySchema]);

export const SIGNING_ALGORITHMS = ['EdDSA', 'ES256', 'RS256'] as const;

export const TokensSchema = z.strictObject({
  issuer: httpUrl.default(d.DEFAULT_ISSUER),
  audience: z.string().min(1).default(d.DEFAULT_AUDIENCE),
  accessTokenTtlS: positiveInt.default(d.DEFAULT_ACCESS_TOKEN_TTL_S),
  refreshTokenTtlS: positiveInt.default(d.DEFAULT_REFRESH_TOKEN_TTL_S),
  algorithm: z.enum(SIGNING_ALGORITHMS).default(d.DEFAULT_SIGNING_ALGORITHM),
  /** The private key set (JWKS) file; created with a fresh key on first start. */
  keysFile: z.string().min(1),
  clockToleranceS: z.number().int().min(0).max(300).default(d.DEFAULT_CLOCK_TOLERANCE_S),
  /** Size of the verified-token cache on the proxy's hot path. */
  cacheMaxEntries: positiveInt.default(d.DEFAULT_TOKEN_CACHE_MAX_ENTRIES),
  /**
   * Confidential clients (resource servers, relying parties) that may call
   * introspection (RFC 7662) and revocation (RFC 7009); each secret is kept
   * as a scrypt hash, as `gatehouse users` writes passwords.
   */
  clients: z.array(z.strictObject({
    id: z.string().min(1).max(200),
    secretHash: z.string().refine(isWellFormedPasswordHash, { error: 'must be a scrypt hash as `gatehouse users` writes them' }),
  })).default([]),
});

