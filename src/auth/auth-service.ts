// The logic of login, refresh and logout, shared by the spec's JSON endpoints
// and the standard OAuth 2.0 token endpoint so both always agree.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { gatehouseError } from '../http/errors.js';
import type { IdentityProvider } from '../identity/identity-provider.js';
import type { SessionRecord, Store } from '../store/store.js';
import type { TokenIssuer } from '../tokens/issuer.js';
import { TokenError, type TokenClaims, type TokenSet, type TokenType } from '../tokens/types.js';
import type { TokenVerifier } from '../tokens/verifier.js';
import { bearerChallenge } from './bearer.js';

export interface AuthServiceDeps {
  identity: IdentityProvider;
  store: Store;
  issuer: TokenIssuer;
  verifier: TokenVerifier;
  refreshTokenTtlS: number;
  logger: Logger;
}

const BEARER_TYPES: readonly TokenType[] = ['Bearer', 'Refresh'];
const REFRESH_TYPES: readonly TokenType[] = ['Refresh'];

export class AuthService {
  readonly #deps: AuthServiceDeps;

  constructor(deps: AuthServiceDeps) {
    this.#deps = deps;
  }

  /** Spec 4.1: a password or an API key in `password`; each login starts a session. */
  async login(username: string, password: string): Promise<TokenSet> {
    const { identity, store, issuer, refreshTokenTtlS, logger } = this.#deps;
    const who = await identity.authenticate(username, password);
    if (!who) {
      logger.info({ event: 'login_failed' }, 'login refused');
      throw gatehouseError('invalid_user_credentials');
    }
    const now = Date.now();
    const session: SessionRecord = {
      sid: randomUUID(),
      sub: who.sub,
      username: who.username,
      method: who.method,
      ...(who.apiKeyId ? { apiKeyId: who.apiKeyId } : {}),
      createdAt: now,
      expiresAt: now + refreshTokenTtlS * 1000,
    };
    await store.createSession(session);
    logger.info({ event: 'login', sub: who.sub, sid: session.sid, amr: who.method, apiKeyId: who.apiKeyId }, 'session started');
    return issuer.issueTokenSet(session, now);
  }

  /** Spec 4.2 and 5.7: a new access token; the refresh token is not rotated. */
  async refresh(refreshToken: string): Promise<TokenSet> {
    let claims: TokenClaims;
    try {
      claims = await this.#deps.verifier.verify(refreshToken, REFRESH_TYPES);
    } catch (error) {
      throw this.#refused(error);
    }
    await this.#requireActiveSession(claims, 'invalid_refresh_token');
    try {
      // Within the clock tolerance a just-expired token verifies; the issuer still refuses it.
      return await this.#deps.issuer.refreshTokenSet(claims, refreshToken);
    } catch (error) {
      throw this.#refused(error);
    }
  }

  /**
   * A bearer token (access or refresh, spec 5.9) of a session that is still
   * active. Used by the gateway's own endpoints; the proxy's hot path has a
   * cached variant that does not ask the store per request.
   */
  async authenticateBearer(token: string): Promise<TokenClaims> {
    let claims: TokenClaims;
    try {
      claims = await this.#deps.verifier.verify(token, BEARER_TYPES);
    } catch (error) {
      const reason = error instanceof TokenError ? error.reason : 'invalid bearer token';
      throw gatehouseError('invalid_bearer_token', { reason, headers: { 'www-authenticate': bearerChallenge(reason) }, cause: error });
    }
    await this.#requireActiveSession(claims, 'invalid_bearer_token');
    return claims;
  }

  /** Ends the session: its refresh token and every access token stop working. */
  async logout(claims: TokenClaims): Promise<void> {
    await this.#deps.store.revokeSession(claims.sid);
    this.#deps.logger.info({ event: 'logout', sub: claims.sub, sid: claims.sid }, 'session ended');
  }

  async #requireActiveSession(claims: TokenClaims, code: 'invalid_refresh_token' | 'invalid_bearer_token'): Promise<void> {
    const session = await this.#deps.store.getSession(claims.sid);
    const reason = !session || session.sub !== claims.sub
      ? 'session ended'
      : !this.#deps.identity.isActive({ sub: session.sub, ...(session.apiKeyId ? { apiKeyId: session.apiKeyId } : {}) })
        ? 'user or API key no longer active'
        : undefined;
    if (!reason) return;
    if (code === 'invalid_refresh_token') throw this.#refused(new TokenError(reason));
    throw gatehouseError('invalid_bearer_token', { reason, headers: { 'www-authenticate': bearerChallenge(reason) } });
  }

  /** Spec 7 fixes the refresh failure's reason; the precise one goes to the log. */
  #refused(cause: unknown) {
    if (!(cause instanceof TokenError)) throw cause;
    this.#deps.logger.info({ event: 'refresh_failed', reason: cause.reason }, 'refresh refused');
    return gatehouseError('invalid_refresh_token', { cause });
  }
}
