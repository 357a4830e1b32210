// The `tokens` section of the config schema: the tokens Gatehouse signs, the
// key set it signs them with, DPoP, and how bearer tokens are checked.
import { z } from 'zod';
import { isWellFormedPasswordHash } from '../core/password-hash-format.js';
import * as d from './defaults.js';
import { help, httpUrl, positiveInt, strongSecret } from './schema-primitives.js';

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
