// Login, refresh and logout when a fronted OpenID Provider keeps the users: the same spec endpoints, throttling and
// audit trail as local mode (both pass through auth/login-guard.ts), but the provider checks the credentials and
// issues the tokens.
//
// Invariants: an API key typed as the password goes to the provider as the password; every token set the provider
// hands out passes the gateway's own bearer rule before the client gets it (else 502, a provider fault). A step-up
// passes `acr_values` and `max_age` on to the provider, and a login whose token is below the levels asked is refused.
// Why: docs/decisions/0018-provider-mode-login-and-roles.md
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { AttemptContext, Authentication } from '../auth/auth-service.js';
import type { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import type { LoginAudit } from '../auth/login-audit.js';
import { LoginGuard } from '../auth/login-guard.js';
import type { LoginFactors } from '../auth/login-factors.js';
import type { Principal } from '../core/principal.js';
import { SESSION_ENDED } from '../auth/token-check.js';
import { gatehouseError, isGatehouseError } from '../core/errors.js';
import type { LoginThrottle } from '../limits/login-throttle.js';
import type { ProviderSessionStore } from '../store/store.js';
import { acrMeets } from '../tokens/authentication-context.js';
import { TokenError, type TokenSet } from '../tokens/types.js';
import type { ProviderConnection } from './provider-connection.js';
import { tokenSessionId } from './provider-token-check.js';

export interface ProviderAuthOptions {
  connection: ProviderConnection;
  bearer: BearerAuthenticator;
  store: ProviderSessionStore;
  throttle: LoginThrottle;
  audit: LoginAudit;
  logger: Logger;
  /** How long an ended provider session is remembered: the longest a token of it can live (the provider's refresh-token lifetime). */
  endedSessionTtlS: number;
  /** Told of every token set the provider hands out, before it is checked (several providers: where its opaque tokens came from). */
  onTokens?: (tokens: TokenSet) => Promise<void>;
  /** The provider's levels, lowest first (`identity.acrValues`): whether a login reached the levels it asked for. */
  acrRanks: readonly string[];
}

export class ProviderAuth implements Authentication {
  readonly #options: ProviderAuthOptions;
  readonly #guard: LoginGuard;

  constructor(options: ProviderAuthOptions) {
    this.#options = options;
    this.#guard = new LoginGuard(options.throttle, options.audit);
  }

  /**
   * Spec 4.1 through the provider's password grant; throttled in front of it
   * like a local login. A step-up's `acr_values` and `max_age` go to the
   * provider, which runs its own factors; the session is the provider's new
   * one (a bearer token sent along does not carry over to it).
   */
  async login(username: string, password: string, context: AttemptContext, factors: LoginFactors = {}): Promise<TokenSet> {
    const { connection } = this.#options;
    // Only the provider's refusal of the credentials (invalid_user_credentials) counts as a failed guess; its outage does not.
    // The provider's users are not known here: no username is written on a refusal's line.
    return this.#guard.login(
      { username, password, context, knownUser: false },
      {
        check: async () => {
          const { client } = await connection.connect();
          const tokens = await client.login(username, password, factors);
          await this.#options.onTokens?.(tokens);
          const who = await this.#admitted(tokens.access_token);
          if (!this.#reachedLevel(who, factors)) {
            // The tokens are never handed out: their grant is ended at the provider when it can be.
            if (client.canRevoke) await client.revoke(tokens.refresh_token).catch(() => undefined);
            throw gatehouseError('insufficient_user_authentication', {
              reason: `the provider's login reached ${who.acr ?? 'no named level'}, not one of ${factors.acrValues!.join(', ')}`,
            });
          }
          return { tokens, who };
        },
        start: async ({ tokens, who }) => ({ result: tokens, admitted: { username: who.username, sub: who.sub, sid: who.sid } }),
      },
    );
  }

  /**
   * Spec 4.2 through the provider's refresh-token grant; the provider decides
   * whether the token may still be used, and whether it rotates (spec: it
   * must not; see the README for Keycloak). A token whose session was ended
   * here is refused before the provider is asked.
   */
  async refresh(refreshToken: string, context: AttemptContext): Promise<TokenSet> {
    const { connection, store } = this.#options;
    return this.#guard.refresh(context, async () => {
      // Spec 7 fixes the refresh failure's reason: the precise one (here: session ended) stays in the cause.
      if (await store.providerSessionEnded(tokenSessionId(refreshToken)))
        throw gatehouseError('invalid_refresh_token', { cause: new TokenError(SESSION_ENDED) });
      const tokens = await (await connection.connect()).client.refresh(refreshToken);
      await this.#options.onTokens?.(tokens);
      const who = await this.#admitted(tokens.access_token, 'invalid_refresh_token');
      return { result: tokens, admitted: { username: who.username, sub: who.sub, sid: who.sid } };
    });
  }

  authenticateBearer(token: string): Promise<Principal> {
    return Promise.resolve(this.#options.bearer.authenticate(token));
  }

  authenticateRequest(req: IncomingMessage): Promise<Principal> {
    return Promise.resolve(this.#options.bearer.authenticateRequest(req));
  }

  /**
   * Ends the login: at the provider (RFC 7009) when it has a revocation
   * endpoint, and here in any case, so the presented token, and every token
   * of its provider session, is refused at once on every instance.
   */
  async logout(principal: Principal, token: string): Promise<void> {
    const { connection, store, logger, endedSessionTtlS } = this.#options;
    const { client } = await connection.connect();
    if (client.canRevoke) {
      await client.revoke(token, principal.tokenType === 'Refresh' ? 'refresh_token' : 'access_token').catch((error: unknown) => {
        logger.warn(
          { event: 'oidc_revocation_failed', err: error, sub: principal.sub },
          'the provider did not take the revocation; the session is ended here only',
        );
      });
    }
    const untilMs = Date.now() + endedSessionTtlS * 1000;
    await store.endProviderSession(principal.sid, untilMs);
    const own = tokenSessionId(token);
    if (own !== principal.sid) await store.endProviderSession(own, untilMs);
    logger.info({ event: 'logout', sub: principal.sub, sid: principal.sid }, 'session ended');
  }

  /** OIDC Core 3.1.2.1 lets a provider answer below the `acr_values` asked: such a login is no step-up, and is refused as one. */
  #reachedLevel(who: Principal, { acrValues }: LoginFactors): boolean {
    return acrValues === undefined || acrMeets(who.acr, acrValues, this.#options.acrRanks);
  }

  /**
   * The principal of a token the provider just issued, by the gateway's own
   * rule. A refusal there is the provider's fault (502), except when the
   * session was ended here: then the caller's own refusal applies.
   */
  async #admitted(accessToken: string, endedRefusal?: 'invalid_refresh_token'): Promise<Principal> {
    try {
      return await this.#options.bearer.authenticate(accessToken);
    } catch (error) {
      if (!isGatehouseError(error) || error.code !== 'invalid_bearer_token') throw error;
      if (endedRefusal && error.reason === SESSION_ENDED) throw gatehouseError(endedRefusal, { cause: error });
      throw gatehouseError('identity_provider_invalid_response', { reason: `the provider issued a token the gateway refuses (${error.reason})`, cause: error });
    }
  }
}
