// Signs the tokens of a session. A login gets an access token and a refresh
// token; a refresh gets a new access token and keeps its refresh token
// (spec 5.7: refresh tokens are not rotated). No token outlives its session.
import { randomUUID } from 'node:crypto';
import { DEFAULT_ACR_MFA, DEFAULT_ACR_PASSWORD } from '../config/defaults.js';
import type { SessionRecord } from '../store/store.js';
import type { Grants } from '../users/identity-provider.js';
import { signCompactJws } from './compact-jws.js';
import type { KeySet } from './keyset.js';
import { acrOf, type AcrNames, type AuthenticationContext } from './authentication-context.js';
import type { TokenType } from '../core/vocabulary.js';
import { TokenError, type TokenClaims, type TokenSet } from './types.js';

export interface TokenIssuerOptions {
  keys: KeySet;
  issuer: string;
  audience: string;
  accessTokenTtlS: number;
  refreshTokenTtlS: number;
  /** The `acr` name of each level (`tokens.acr`); absent, the defaults. */
  acr?: AcrNames;
}

/**
 * The issuer as tokens and discovery name it. OpenID Connect Discovery 4.3
 * compares the two exactly, and a URL-valued config may well end in a slash.
 */
export function canonicalIssuer(issuer: string): string {
  return issuer.replace(/\/+$/, '');
}

/** The claims a session's tokens share; `iat`, `exp`, `jti` and `typ` differ per token. */
type SessionClaims = Pick<TokenClaims, 'sub' | 'sid' | 'preferred_username' | 'amr' | 'acr' | 'auth_time' | 'roles' | 'groups' | 'scope' | 'ro' | 'cnf'>;

/** The authorization claims of a session's grants; none when the identity carries none. */
function grantClaims(grants: Grants | undefined): Pick<TokenClaims, 'roles' | 'groups' | 'scope' | 'ro'> {
  if (grants === undefined) return {};
  return {
    roles: [...grants.roles],
    ...(grants.groups.length > 0 && { groups: [...grants.groups] }),
    ...(grants.scopes !== undefined && { scope: grants.scopes.join(' ') }),
    ...(grants.readOnly && { ro: true as const }),
  };
}

/** Every token's JOSE header past `alg` and `kid`. */
const JWT_HEADER = { typ: 'JWT' } as const;

export class TokenIssuer {
  readonly #keys: KeySet;
  readonly #issuer: string;
  readonly #audience: string;
  readonly #accessTokenTtlS: number;
  readonly #refreshTokenTtlS: number;
  readonly #acr: AcrNames;

  constructor(options: TokenIssuerOptions) {
    this.#keys = options.keys;
    this.#issuer = canonicalIssuer(options.issuer);
    this.#audience = options.audience;
    this.#accessTokenTtlS = options.accessTokenTtlS;
    this.#refreshTokenTtlS = options.refreshTokenTtlS;
    this.#acr = options.acr ?? { password: DEFAULT_ACR_PASSWORD, mfa: DEFAULT_ACR_MFA };
  }

  /** The configured name of each level. */
  get acrNames(): AcrNames {
    return this.#acr;
  }

  /**
   * A new login: both tokens. The refresh token ends with the session (capped at the refresh lifetime).
   * `jkt`: the thumbprint of the key the login's DPoP proof was signed with; both tokens are bound to it.
   * `authentication`: what the login proved and when; absent, the session's method at its start.
   * A step-up signs a new set for a session that exists: same `sid`, the new proof.
   */
  async issueTokenSet(session: SessionRecord, now = Date.now(), grants?: Grants, jkt?: string, authentication?: AuthenticationContext): Promise<TokenSet> {
    const iat = epochSeconds(now);
    // A key that expires sooner ends the session's tokens then.
    const refreshExp = Math.min(Math.floor(session.expiresAt / 1000), iat + this.#refreshTokenTtlS, Math.floor((grants?.notAfterMs ?? Infinity) / 1000));
    if (refreshExp <= iat) throw new TokenError('session expired');
    const accessExp = Math.min(iat + this.#accessTokenTtlS, refreshExp);
    const claims: SessionClaims = {
      sub: session.sub,
      sid: session.sid,
      preferred_username: session.username,
      ...this.#authenticationClaims(authentication ?? { amr: [session.method], authTimeS: epochSeconds(session.createdAt) }),
      ...grantClaims(grants),
      ...(jkt !== undefined && { cnf: { jkt } }),
    };
    const [accessToken, refreshToken] = await Promise.all([this.#sign(claims, 'Bearer', iat, accessExp), this.#sign(claims, 'Refresh', iat, refreshExp)]);
    return {
      access_token: accessToken,
      expires_in: accessExp - iat,
      refresh_expires_in: refreshExp - iat,
      refresh_token: refreshToken,
      token_type: jkt === undefined ? 'bearer' : 'DPoP',
    };
  }

  /**
   * A refresh: a new access token for the same session, and the same refresh
   * token back. `refresh` must be the verified claims of `refreshToken`.
   * Throws TokenError('token expired') when the refresh token has no whole
   * second left (the verifier's clock tolerance can let such a token through).
   * `jkt`: the key the refresh's DPoP proof was signed with (the caller has
   * checked it is the refresh token's own when that one is bound); the new
   * access token is bound to it.
   */
  async refreshTokenSet(refresh: TokenClaims, refreshToken: string, now = Date.now(), grants?: Grants, jkt?: string): Promise<TokenSet> {
    if (refresh.typ !== 'Refresh') throw new TokenError('wrong token type');
    const iat = epochSeconds(now);
    if (refresh.exp <= iat) throw new TokenError('token expired');
    const accessExp = Math.min(iat + this.#accessTokenTtlS, refresh.exp);
    const claims: SessionClaims = {
      sub: refresh.sub,
      sid: refresh.sid,
      preferred_username: refresh.preferred_username,
      amr: [...refresh.amr],
      // A refresh is not a new authentication: the level and its time stay the login's.
      ...(refresh.acr !== undefined && { acr: refresh.acr }),
      ...(refresh.auth_time !== undefined && { auth_time: refresh.auth_time }),
      // The grants as they are now: a role given since the login reaches the session here.
      ...grantClaims(grants),
      ...(jkt !== undefined && { cnf: { jkt } }),
    };
    return {
      access_token: await this.#sign(claims, 'Bearer', iat, accessExp),
      expires_in: accessExp - iat,
      refresh_expires_in: refresh.exp - iat,
      refresh_token: refreshToken,
      token_type: jkt === undefined ? 'bearer' : 'DPoP',
    };
  }

  #authenticationClaims({ amr, authTimeS }: AuthenticationContext): Pick<TokenClaims, 'amr' | 'acr' | 'auth_time'> {
    return { amr: [...amr], acr: acrOf(amr, this.#acr), auth_time: authTimeS };
  }

  /** The compact JWS jose's SignJWT would write (same header, same claims in the same order): compact-jws.ts. */
  async #sign(claims: SessionClaims, typ: TokenType, iat: number, exp: number): Promise<string> {
    const payload = {
      typ,
      sid: claims.sid,
      preferred_username: claims.preferred_username,
      amr: claims.amr,
      ...(claims.acr !== undefined && { acr: claims.acr }),
      ...(claims.auth_time !== undefined && { auth_time: claims.auth_time }),
      ...(claims.roles !== undefined && { roles: claims.roles }),
      ...(claims.groups !== undefined && { groups: claims.groups }),
      ...(claims.scope !== undefined && { scope: claims.scope }),
      ...(claims.ro !== undefined && { ro: claims.ro }),
      ...(claims.cnf !== undefined && { cnf: claims.cnf }),
      iss: this.#issuer,
      sub: claims.sub,
      aud: this.#audience,
      iat,
      exp,
      jti: randomUUID(),
    };
    // Read per token: a rotation picked up from disk applies to the very next one.
    return signCompactJws(this.#keys.signingKey(), JWT_HEADER, payload);
  }
}

function epochSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}
