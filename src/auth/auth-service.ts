// The logic of login, refresh and logout, shared by the spec's JSON endpoints
// and the standard OAuth 2.0 token endpoint so both always agree.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { gatehouseError, isGatehouseError } from '../http/errors.js';
import type { AuthenticateOptions, IdentityProvider } from '../identity/identity-provider.js';
import type { SessionRecord, Store } from '../store/store.js';
import type { TokenIssuer } from '../tokens/issuer.js';
import { TokenError, type TokenClaims, type TokenSet, type TokenType } from '../tokens/types.js';
import type { TokenVerifier } from '../tokens/verifier.js';
import type { BearerAuthenticator } from './bearer-authenticator.js';
import type { Principal } from './principal.js';

export interface AuthServiceDeps {
  identity: IdentityProvider;
  store: Store;
  issuer: TokenIssuer;
  verifier: TokenVerifier;
  /** The one rule for whether a token's session is alive (the proxy asks it too). */
  bearer: BearerAuthenticator;
  refreshTokenTtlS: number;
  logger: Logger;
}

const REFRESH_TYPES: readonly TokenType[] = ['Refresh'];

export class AuthService {
  readonly #deps: AuthServiceDeps;

  constructor(deps: AuthServiceDeps) {
    this.#deps = deps;
  }

  /** Spec 4.1: a password or an API key in `password`; each login starts a session. */
  async login(username: string, password: string, options: AuthenticateOptions = {}): Promise<TokenSet> {
    const { identity, store, issuer, refreshTokenTtlS, logger } = this.#deps;
    const who = await identity.authenticate(username, password, options);
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
    try {
      await this.#deps.bearer.authenticate(refreshToken, claims);
    } catch (error) {
      // The bearer rule's refusal, in refresh's own words (spec 7); a store outage stays a 503.
      if (isGatehouseError(error) && error.code === 'invalid_bearer_token') throw this.#refused(new TokenError(error.reason));
      throw error;
    }
    try {
      // Within the clock tolerance a just-expired token verifies; the issuer still refuses it.
      return await this.#deps.issuer.refreshTokenSet(claims, refreshToken);
    } catch (error) {
      throw this.#refused(error);
    }
  }

  /** A bearer token (access or refresh, spec 5.9) of a session that is still active, for the gateway's own endpoints. */
  async authenticateBearer(token: string): Promise<Principal> {
    return this.#deps.bearer.authenticate(token);
  }

  /** Ends the session: its refresh token, every access token and every tunnel opened with them stop working. */
  async logout(principal: Pick<Principal, 'sid' | 'sub'>): Promise<void> {
    await this.#deps.store.revokeSession(principal.sid);
    this.#deps.logger.info({ event: 'logout', sub: principal.sub, sid: principal.sid }, 'session ended');
  }

  /** Spec 7 fixes the refresh failure's reason; the precise one goes to the log. */
  #refused(cause: unknown) {
    if (!(cause instanceof TokenError)) throw cause;
    this.#deps.logger.info({ event: 'refresh_failed', reason: cause.reason }, 'refresh refused');
    return gatehouseError('invalid_refresh_token', { cause });
  }
}
