// Login, refresh and logout when several providers are configured: a login
// goes to the provider it names (its `provider` field) or the default one, a
// refresh to the provider whose token it is (by issuer, or the origin of an
// opaque one), a logout to the provider of the session. Every provider's
// login passes the same guard (one throttle, one audit, the same answers);
// a refresh token of no provider is refused through it too, as a guess.
import type { IncomingMessage } from 'node:http';
import type { AttemptContext, Authentication } from '../auth/auth-service.js';
import type { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import type { LoginGuard } from '../auth/login-guard.js';
import { gatehouseError } from '../core/errors.js';
import type { Principal } from '../core/principal.js';
import { TokenError, type TokenSet } from '../tokens/types.js';
import type { IssuerTokenCheck } from './issuer-token-check.js';

export interface SeveralProvidersAuthOptions {
  /** Each provider's own login, refresh and logout, by name. */
  byName: ReadonlyMap<string, Authentication>;
  defaultProvider: string;
  bearer: BearerAuthenticator;
  dispatch: IssuerTokenCheck;
  guard: LoginGuard;
}

export class SeveralProvidersAuth implements Authentication {
  readonly #options: SeveralProvidersAuthOptions;

  constructor(options: SeveralProvidersAuthOptions) {
    this.#options = options;
  }

  async login(username: string, password: string, context: AttemptContext): Promise<TokenSet> {
    const name = context.provider ?? this.#options.defaultProvider;
    const auth = this.#options.byName.get(name);
    if (auth === undefined) throw gatehouseError('unknown_identity_provider', { reason: `no provider is named ${JSON.stringify(name)}`.slice(0, 120) });
    return auth.login(username, password, { ...context, provider: name });
  }

  async refresh(refreshToken: string, context: AttemptContext): Promise<TokenSet> {
    let name: string;
    try {
      name = (await this.#options.dispatch.providerOf(refreshToken)).name;
    } catch (error) {
      if (!(error instanceof TokenError)) throw error;
      return this.#options.guard.refresh(context, () => Promise.reject(gatehouseError('invalid_refresh_token', { cause: error })));
    }
    return this.#options.byName.get(name)!.refresh(refreshToken, { ...context, provider: name });
  }

  authenticateBearer(token: string): Promise<Principal> {
    return Promise.resolve(this.#options.bearer.authenticate(token));
  }

  authenticateRequest(req: IncomingMessage): Promise<Principal> {
    return Promise.resolve(this.#options.bearer.authenticateRequest(req));
  }

  async logout(principal: Principal, token: string): Promise<void> {
    await this.#options.byName.get(principal.provider!)!.logout(principal, token);
  }
}
