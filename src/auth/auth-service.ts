// The logic of login, refresh and logout, shared by the spec's JSON endpoints
// and the standard OAuth 2.0 token endpoint so both always agree.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { gatehouseError, isGatehouseError } from '../core/errors.js';
import type { Identity, IdentityProvider } from '../users/identity-provider.js';
import { parseApiKey } from '../users/api-keys.js';
import { storeUnavailable } from '../store/store-unavailable.js';
import type { LoginThrottle } from '../limits/login-throttle.js';
import type { SessionRecord, SessionStore } from '../store/store.js';
import type { TokenIssuer } from '../tokens/issuer.js';
import type { TokenType } from '../core/vocabulary.js';
import { TokenError, type TokenClaims, type TokenSet } from '../tokens/types.js';
import type { TokenVerifier } from '../tokens/verifier.js';
import type { BearerAuthenticator } from './bearer-authenticator.js';
import type { TokenRequestProofs } from './dpop-token-request.js';
import type { LoginAudit } from './login-audit.js';
import { LoginGuard, type AttemptContext } from './login-guard.js';
import type { Principal } from '../core/principal.js';
import type { SecondFactors } from '../factors/second-factors.js';
import type { PasskeyProof } from '../factors/passkeys.js';
import type { AuthMethodReference } from '../core/vocabulary.js';
import { refuseUnreachableLevel, type LoginFactors } from './login-factors.js';

/** Where an attempt comes from; defined with the guard every attempt passes. */
export type { AttemptContext } from './login-guard.js';

/** What the spec's endpoints ask of login, whichever identity mode answers (local here, a fronted provider in oidc/). */
export interface Authentication {
  /** `factors`: a second factor's code, the levels wanted, the session stepped up (login-factors.ts); a mode may not take them. */
  login(username: string, password: string, context: AttemptContext, factors?: LoginFactors): Promise<TokenSet>;
  refresh(refreshToken: string, context: AttemptContext): Promise<TokenSet>;
  /** A bearer token (access or refresh, spec 5.9) of a session that is still active. */
  authenticateBearer(token: string): Promise<Principal>;
  /** The request's token, by the bearer rule, a DPoP-bound one with its proof (auth/bearer-authenticator.ts). */
  authenticateRequest(req: IncomingMessage): Promise<Principal>;
  /** Ends the session of `principal`, who presented `token`. */
  logout(principal: Principal, token: string): Promise<void>;
}

export interface AuthServiceDeps {
  identity: IdentityProvider;
  store: SessionStore;
  issuer: TokenIssuer;
  verifier: TokenVerifier;
  /** The one rule for whether a token's session is alive (the proxy asks it too). */
  bearer: BearerAuthenticator;
  refreshTokenTtlS: number;
  logger: Logger;
  throttle: LoginThrottle;
  audit: LoginAudit;
  /** DPoP proofs of logins and refreshes (`tokens.dpop`); absent, tokens are never bound. */
  dpop?: TokenRequestProofs;
  /** Among several identity providers, the local one's name: `authenticateBearer` admits its tokens only (introspection answers for nobody else's). */
  provider?: string;
  /** Local users' second factors; absent, a login with a code is refused as a wrong one. */
  factors?: SecondFactors;
}

const REFRESH_TYPES: readonly TokenType[] = ['Refresh'];

export class AuthService implements Authentication {
  readonly #deps: AuthServiceDeps;
  readonly #guard: LoginGuard;

  constructor(deps: AuthServiceDeps) {
    this.#deps = deps;
    this.#guard = new LoginGuard(deps.throttle, deps.audit);
  }

  /** How the token requests' DPoP proofs are checked: both wire formats (JSON routes, the OAuth token endpoint) read them alike. */
  get tokenRequestProofs(): TokenRequestProofs | undefined {
    return this.#deps.dpop;
  }

  /**
   * Spec 4.1: a password or an API key in `password`; each login starts a
   * session, or steps up `factors.session` (same sid). A wrong second factor is
   * refused as a wrong password is, and counted alike. Throttled per username, address and both.
   */
  async login(username: string, password: string, context: AttemptContext, factors: LoginFactors = {}): Promise<TokenSet> {
    const { identity, issuer } = this.#deps;
    refuseUnreachableLevel(factors, parseApiKeyMethod(password), issuer.acrNames);
    return this.#guard.login(
      { username, password, context, knownUser: identity.hasUser(username) },
      {
        check: async () => {
          const who = await identity.authenticate(username, password, { clientAddress: context.address });
          if (!who) throw gatehouseError('invalid_user_credentials');
          // An API key pinned to a DPoP key logs in only with that key's proof: anyone else holding it fails as with a wrong key.
          const pinned = who.keyScope?.dpopJkt;
          if (pinned !== undefined && pinned !== context.dpopThumbprint) {
            throw gatehouseError('invalid_user_credentials', { cause: new TokenError('the API key logs in only with its DPoP key') });
          }
          // A step-up is of the caller's own session: another user's token steps up nothing (and uses up no code).
          if (factors.session !== undefined && factors.session.sub !== who.sub) throw gatehouseError('invalid_user_credentials');
          const amr: AuthMethodReference[] = [who.method];
          if (factors.otp !== undefined) {
            const second = await this.#deps.factors?.check(who.sub, factors.otp);
            if (!second) throw gatehouseError('invalid_user_credentials', { cause: new TokenError('wrong or used one-time code') });
            amr.push(second);
          }
          return { who, amr };
        },
        start: async ({ who, amr }) => this.#startSession(who, amr, context, factors.session),
      },
    );
  }

  /**
   * A passkey the user unlocked (factors/passkeys.ts): alone, a passwordless
   * login starting a session; with the caller's own session, its second
   * factor (same sid; a password login's `pwd` stays in `amr`). Its session's
   * method is `pwd` (the sessions' one interactive kind); `amr` says how.
   * `unlock` checks the browser's answer (null: refused) behind the guard, so
   * refused answers are audited and throttled by address like any refused login.
   */
  loginWithPasskey(unlock: () => Promise<PasskeyProof | null>, context: AttemptContext, session?: Principal): Promise<TokenSet> {
    return this.#guard.passkey(context, async () => {
      const proof = await unlock();
      if (proof === null) throw gatehouseError('passkey_refused');
      if (session !== undefined && session.sub !== proof.sub) throw gatehouseError('invalid_user_credentials');
      const who: Identity = { sub: proof.sub, username: proof.username, method: 'pwd' };
      const before = session?.claims?.amr;
      const amr: AuthMethodReference[] = Array.isArray(before) && before.includes('pwd') ? ['pwd', ...proof.amr] : proof.amr;
      const { result, admitted } = await this.#startSession(who, amr, context, session);
      // Audited as the guard's `passkey`, not as the session's kind (`pwd` reads `password`).
      return { result, admitted: { username: admitted.username, sub: admitted.sub, sid: admitted.sid } };
    });
  }

  /** Spec 4.2 and 5.7: a new access token; the refresh token is not rotated. Forged or malformed refresh tokens count against the address. */
  async refresh(refreshToken: string, context: AttemptContext): Promise<TokenSet> {
    return this.#guard.refresh(context, async () => {
      let verified = false;
      try {
        const claims: TokenClaims = await this.#deps.verifier.verify(refreshToken, REFRESH_TYPES);
        verified = true;
        // RFC 9449 5: a bound refresh token is refreshed only by the holder of its key.
        if (claims.cnf !== undefined && claims.cnf.jkt !== context.dpopThumbprint) {
          throw new TokenError(context.dpopThumbprint === undefined ? 'a DPoP-bound refresh token needs a DPoP proof' : 'the DPoP proof is of another key');
        }
        const principal = await this.#deps.bearer.authenticate(refreshToken, claims);
        // Within the clock tolerance a just-expired token verifies; the issuer still refuses it.
        // The grants as of now: a role given since the login reaches the new access token; bound to the proof's key, if any.
        const tokens = await this.#deps.issuer.refreshTokenSet(claims, refreshToken, Date.now(), this.#deps.identity.grants(principal), context.dpopThumbprint);
        return { result: tokens, admitted: { username: principal.username, sub: principal.sub, sid: principal.sid } };
      } catch (error) {
        throw this.#refused(error, verified);
      }
    });
  }

  /** A new session, or the stepped-up one; its tokens carry the login's proof (`amr`, its level, now as `auth_time`). */
  async #startSession(who: Identity, amr: AuthMethodReference[], context: AttemptContext, stepped: Principal | undefined) {
    const { identity, store, issuer, refreshTokenTtlS } = this.#deps;
    const now = Date.now();
    const proof = { amr, authTimeS: Math.floor(now / 1000) };
    let session: SessionRecord | null;
    if (stepped === undefined) {
      session = {
        sid: randomUUID(),
        sub: who.sub,
        username: who.username,
        method: who.method,
        ...(who.apiKeyId ? { apiKeyId: who.apiKeyId } : {}),
        createdAt: now,
        expiresAt: now + refreshTokenTtlS * 1000,
      };
      await store.createSession(session);
    } else {
      session = await store.getSession(stepped.sid).catch((error: unknown) => {
        throw storeUnavailable(error);
      });
      // Ended since its token was checked: nothing left to step up.
      if (session === null || session.sub !== who.sub) throw gatehouseError('invalid_user_credentials');
    }
    if (identity.stillHolds && !(await identity.stillHolds(who))) {
      if (stepped === undefined) await store.revokeSession(session.sid);
      throw gatehouseError('invalid_user_credentials');
    }
    // The audit's words for the session's method: `pwd` is a password login.
    const method = who.method === 'api_key' ? 'api_key' : 'password';
    const admitted = { method, username: who.username, sub: who.sub, sid: session.sid } as const;
    // The tokens carry the session's grants (a stepped-up session keeps its own: a scoped key's stay narrowed);
    // a login with a DPoP proof binds both tokens to its key (RFC 9449 5).
    const grants = identity.grants(stepped ?? who);
    return { result: await issuer.issueTokenSet(session, now, grants, context.dpopThumbprint, proof), admitted };
  }

  /** A bearer token (access or refresh, spec 5.9) of a session that is still active, for the gateway's own endpoints. */
  async authenticateBearer(token: string): Promise<Principal> {
    const principal = await this.#deps.bearer.authenticate(token);
    if (principal.provider !== this.#deps.provider) throw gatehouseError('invalid_bearer_token', { reason: 'not a token Gatehouse issued' });
    return principal;
  }

  async authenticateRequest(req: IncomingMessage): Promise<Principal> {
    return this.#deps.bearer.authenticateRequest(req);
  }

  /** Ends the session: its refresh token, every access token and every tunnel opened with them stop working. */
  async logout(principal: Pick<Principal, 'sid' | 'sub'>): Promise<void> {
    await this.#deps.store.revokeSession(principal.sid);
    this.#deps.logger.info({ event: 'logout', sub: principal.sub, sid: principal.sid }, 'session ended');
  }

  /**
   * Spec 7 fixes the refresh failure's reason; the precise one goes to the
   * log. The bearer rule's refusal is put in refresh's own words; anything
   * else (a store outage: 503) is thrown on as it is.
   */
  #refused(error: unknown, verified: boolean) {
    const cause = isGatehouseError(error) && error.code === 'invalid_bearer_token' ? new TokenError(error.reason) : error;
    if (!(cause instanceof TokenError)) throw cause;
    this.#deps.logger.info({ event: 'refresh_failed', reason: cause.reason }, 'refresh refused');
    // Refused after its signature verified (its session ended, its time is up): ours, so not a guess.
    return gatehouseError('invalid_refresh_token', { cause: verified ? cause.ofWellSignedToken() : cause });
  }
}

/** The first factor a secret is: an API key by its shape, else a password (the level check before any is tried). */
function parseApiKeyMethod(secret: string): AuthMethodReference {
  return parseApiKey(secret) === null ? 'pwd' : 'api_key';
}
