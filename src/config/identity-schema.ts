// The `identity` section of the config schema: who the users are, the local
// users file or a fronted OpenID Provider (the tokens Gatehouse signs are
// tokens-schema.ts's).
import { z } from 'zod';
import * as d from './defaults.js';
import { acrValue, help, httpUrl, nonNegativeInt, positiveInt } from './schema-primitives.js';

/** Gatehouse's own users (`identity.provider: local`): a YAML file of scrypt password hashes and API key digests; Gatehouse signs the tokens. */
export const LocalIdentitySchema = z.strictObject({
  /** Gatehouse's own users file. */
  provider: z.literal('local').meta(help('who the users are: local (a users file of its own) or oidc (an OpenID Provider it fronts)', 'local')),
  /**
   * The YAML users file that `gatehouse users …` and `gatehouse apikeys …`
   * manage. With `usersIn: store` only a seed, which need not exist: read
   * once into a store never seeded, never again.
   */
  usersFile: z
    .string()
    .min(1)
    .meta(
      help(
        'the YAML file of users and their password hashes (`gatehouse users add NAME` creates it; with usersIn: store only a seed, which need not exist)',
        './users.yaml',
      ),
    ),
  /** Pick up edits of the users file without a restart. */
  watch: z.boolean().default(true),
  /**
   * Where the users live. `file`: the users file is the source (one
   * instance, or instances sharing that file). `store`: in Redis (needs
   * `store.url`), so `gatehouse users …` and `apikeys …` run from any host
   * reach every instance at once, and Redis is the user database: back it up
   * (docs/operations/backup-and-upgrade.md). The users file, if it exists, only
   * seeds a store never seeded; a store that lost its users is an alarm, put
   * right with `gatehouse users import` of an export. See
   * docs/operations/scaling.md.
   */
  usersIn: z.enum(['file', 'store']).default('file'),
  /**
   * With `usersIn: store`: how often each instance reads the users again
   * whatever it heard. Changes reach every instance at once through the
   * store's announcements; this catches one an instance missed.
   */
  usersRereadS: positiveInt.default(d.DEFAULT_USERS_REREAD_S),
});

/**
 * An OpenID Provider that Gatehouse fronts (`identity.provider: oidc`): login
 * and refresh go to its token endpoint, bearer tokens are checked against its
 * keys (access tokens) or its introspection (refresh tokens, spec 5.9).
 */
export const OidcIdentitySchema = z.strictObject({
  /** A fronted OpenID Provider. */
  provider: z.literal('oidc').meta(help('who the users are: local (a users file of its own) or oidc (an OpenID Provider it fronts)', 'oidc')),
  /** The provider's issuer URL; discovery is read from `<issuer>/.well-known/openid-configuration`. */
  issuer: httpUrl.meta(help("the OpenID Provider's issuer URL", 'https://login.example.com/realms/main')),
  /** Gatehouse's client id at the provider. */
  clientId: z.string().min(1).meta(help("Gatehouse's client id at the provider", 'gatehouse')),
  /** How Gatehouse authenticates at the token endpoint (RFC 6749 2.3, OIDC Core 9). */
  clientAuth: z.enum(['client_secret_basic', 'client_secret_post', 'private_key_jwt']).default('client_secret_basic'),
  /** For client_secret_basic and client_secret_post, which need it; better set from the environment than in the file. */
  clientSecret: z.string().min(1).optional(),
  /**
   * For private_key_jwt, which needs it: the client's private key, a PKCS#8
   * PEM file (its public key registered at the provider); checked at start,
   * an unreadable one is a config error (exit 78).
   */
  privateKeyFile: z.string().min(1).optional(),
  /** For private_key_jwt: the algorithm the client assertion is signed with, to suit the key. */
  privateKeyAlgorithm: z.enum(['RS256', 'ES256', 'EdDSA']).default('RS256'),
  /** The `kid` the provider knows the key by, when it needs one to pick the key. */
  privateKeyId: z.string().min(1).optional(),
  /** The scopes asked for at login (the password grant's `scope`). */
  scopes: z.array(z.string().min(1)).default(['openid']),
  /** The audience (resource indicator) access tokens must carry. */
  audience: z.string().min(1).optional(),
  /** Which claims carry the login name, the roles and the groups. */
  claims: z
    .strictObject({
      /** The claim with the login name (the identity headers' username). */
      username: z.string().min(1).default('preferred_username'),
      /** The claim with the user's roles, a list (what route rules' `anyRole` and `allRoles` check). */
      roles: z.string().min(1).default('roles'),
      /** The claim with the user's groups, a list. */
      groups: z.string().min(1).default('groups'),
      /**
       * The provider's session id (Keycloak's `sid`, in every token of a login):
       * a logout at the gateway ends every token naming it. A token without it
       * is its own session.
       */
      session: z.string().min(1).default('sid'),
    })
    .prefault({}),
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
  /**
   * The levels the provider's tokens carry in `acr`, lowest first (its
   * `acr_values_supported`, ranked): a route asking for one (`authorize.acr`)
   * takes a token at a later one too. Empty: a route's `acr` is met by
   * exactly that value only.
   */
  acrValues: z
    .array(acrValue)
    .max(20)
    .refine((values) => new Set(values).size === values.length, { error: 'each level is named once' })
    .default([]),
});
export type OidcIdentityConfig = z.infer<typeof OidcIdentitySchema>;
