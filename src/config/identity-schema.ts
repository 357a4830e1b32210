// Who the users are (the local users file or a fronted OpenID Provider) and
// the tokens Gatehouse signs: their part of the config schema.
import { z } from 'zod';
import { isWellFormedPasswordHash } from '../core/password-hash-format.js';
import * as d from './defaults.js';
import { acrValue, help, httpUrl, nonNegativeInt, positiveInt, strongSecret } from './schema-primitives.js';

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

/** Who the users are: Gatehouse's own users file (`local`), or an OpenID Provider it fronts (`oidc`); `provider` says which, and which fields apply. */
export const IdentitySchema = z
  .discriminatedUnion('provider', [LocalIdentitySchema, OidcIdentitySchema])
  .meta(help('who the users are', '{provider: local, usersFile: ./users.yaml}'));

/**
 * The reference's example of `tokens.clients[].secretHash`: a real hash (of a
 * random secret nobody kept), so that the documented value loads as written.
 */
export const CLIENT_SECRET_HASH_EXAMPLE = 'scrypt$ln=15,r=8,p=1$dgnFZVhp3FgnM2bTza1b4Q$p8HsfsJL-bDbcvwxTqeQX2V1j1W0H-F6iBT676yHd_Y';

export const SIGNING_ALGORITHMS = ['EdDSA', 'ES256', 'RS256'] as const;

/** The asymmetric JWS algorithms a DPoP proof may use: `none` and HMAC are not among them, so no config can allow them. */
export const DPOP_ALGORITHMS = ['ES256', 'ES384', 'ES512', 'EdDSA', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512'] as const;

/** DPoP (RFC 9449): tokens bound to a key the client proves it holds on every request. */
export const DpopSchema = z.strictObject({
  /**
   * `optional`: a login or refresh that sends a `DPoP` proof gets bound tokens
   * (`token_type: DPoP`), one without gets plain bearer tokens as before.
   * `required`: a login or refresh without a proof is refused (400
   * `dpop_proof_refused`, OAuth error `invalid_dpop_proof`). Bound tokens are
   * enforced on every bearer check either way.
   */
  policy: z.enum(['optional', 'required']).default('optional'),
  /** The algorithms a proof may be signed with (its `alg`); discovery names them in `dpop_signing_alg_values_supported`. */
  algorithms: z
    .array(z.enum(DPOP_ALGORITHMS))
    .min(1)
    .default([...d.DEFAULT_DPOP_ALGORITHMS]),
  /**
   * How far a proof's `iat` may lie from the gateway's clock, before or after.
   * Each proof's `jti` is remembered in the store for twice as long, so no
   * proof can be used twice while it could still be accepted.
   */
  proofWindowS: z.number().int().min(1).max(600).default(d.DEFAULT_DPOP_PROOF_WINDOW_S),
  /**
   * Server nonces (RFC 9449 8): every proof must carry the nonce the gateway
   * hands out in `DPoP-Nonce` (the current one or the one before), so a proof
   * signed ahead of time goes stale. A proof without it is refused with
   * `use_dpop_nonce` and the nonce to use; clients such as openid-client retry with it.
   */
  requireNonce: z.boolean().default(false),
  /** How long one nonce is handed out before the next; shared by every instance through the store. */
  nonceRotateS: z.number().int().min(10).max(3600).default(d.DEFAULT_DPOP_NONCE_ROTATE_S),
});

/** The tokens Gatehouse signs, the key set it signs them with, and how bearer tokens are checked. */
export const TokensSchema = z.strictObject({
  /**
   * The tokens' `iss`, and the base of the discovery URLs: the gateway's
   * public URL. Absent: `http://<server.host>:<server.port>` (`https://` with
   * `server.tls`; `localhost` for a wildcard host such as 0.0.0.0), so moving
   * the listener moves it too; with
   * `server.port: 0` (any free port) it stays `http://localhost:8080`. One that
   * names another port than the listener's is warned about at start.
   */
  issuer: httpUrl.default(d.DEFAULT_ISSUER),
  /** The tokens' `aud`. */
  audience: z.string().min(1).default(d.DEFAULT_AUDIENCE),
  /** Lifetime of an access token. */
  accessTokenTtlS: positiveInt.default(d.DEFAULT_ACCESS_TOKEN_TTL_S),
  /** Lifetime of a refresh token. */
  refreshTokenTtlS: positiveInt.default(d.DEFAULT_REFRESH_TOKEN_TTL_S),
  /** The signing algorithm; after a change the next start rotates to a key of it (the old key keeps verifying). */
  algorithm: z.enum(SIGNING_ALGORITHMS).default(d.DEFAULT_SIGNING_ALGORITHM),
  /**
   * The private key set (JWKS) file; created with a fresh key on first start
   * (mode 0600). Required in local mode; a fronted provider (oidc) signs the
   * tokens itself, so there it is neither needed nor created.
   */
  keysFile: z.string().min(1).meta(help('where the signing keys live (created on first start; outside the config folder)', '../data/keys.json')).optional(),
  /**
   * With a Redis store: the secret that seals (HMAC) the public signing keys
   * each instance publishes there, the same on every instance; an entry not
   * sealed by it (or by `keySealSecretNext`/`keySealSecretPrevious`) is
   * ignored. Absent: derived from `requests.serviceToken`, as before it had a
   * setting of its own. Better set from the environment than in the file.
   */
  keySealSecret: strongSecret.optional(),
  /** Phase one of a rotation of the seal: the new secret, accepted (entries it sealed are opened) but not yet sealing. */
  keySealSecretNext: strongSecret.optional(),
  /** Phase two: the old secret, still accepted; entries it sealed are sealed again with `keySealSecret`. */
  keySealSecretPrevious: strongSecret.optional(),
  /** Leeway for `exp` and `nbf` when a token is checked. */
  clockToleranceS: z.number().int().min(0).max(300).default(d.DEFAULT_CLOCK_TOLERANCE_S),
  /** Size of the verified-token cache on the proxy's hot path. */
  cacheMaxEntries: positiveInt.default(d.DEFAULT_TOKEN_CACHE_MAX_ENTRIES),
  /** Sender-constrained tokens (DPoP, RFC 9449): how they are issued and which proofs are accepted. */
  dpop: DpopSchema.prefault({}),
  /**
   * The tokens' `acr` (OIDC Core 2), one name per level a login reaches;
   * routes ask for them (`authorize.acr`, RFC 9470) and discovery lists them
   * in `acr_values_supported`. `mfa` ranks above `password`: a route that
   * asks for `password` takes an `mfa` token too.
   */
  acr: z
    .strictObject({
      /** One factor: a password or an API key. */
      password: z.string().min(1).max(200).default(d.DEFAULT_ACR_PASSWORD),
      /** Two factors: a password and a one-time code (TOTP or a recovery code). */
      mfa: z.string().min(1).max(200).default(d.DEFAULT_ACR_MFA),
    })
    .refine((names) => names.password !== names.mfa, { error: 'password and mfa must be different names' })
    .prefault({}),
  /**
   * Confidential clients (resource servers, relying parties) that may call
   * introspection (RFC 7662) and revocation (RFC 7009); each secret is kept
   * as a scrypt hash, as `gatehouse users` writes passwords.
   */
  clients: z
    .array(
      z.strictObject({
        /** The client's id, as it authenticates (HTTP Basic, or `client_id` in the form). */
        id: z.string().min(1).max(200).meta(help("the client's id, as it authenticates", 'orders-service')),
        /** A scrypt hash of the client's secret, in the users file's format: `gatehouse clients add ID` makes a secret and its entry. */
        secretHash: z
          .string()
          .refine(isWellFormedPasswordHash, { error: 'must be a scrypt hash as `gatehouse clients add` prints them' })
          .meta(help("a scrypt hash of the client's secret, as `gatehouse clients add ID` prints it", CLIENT_SECRET_HASH_EXAMPLE)),
      }),
    )
    .default([]),
});
