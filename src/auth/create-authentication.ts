// The one place that picks how logins and bearer tokens are checked, by the
// identity mode: local (Gatehouse checks credentials against the users file
// and signs its own tokens) or oidc (a fronted OpenID Provider does both, and
// the gateway verifies its tokens). Either way the spec's endpoints, the
// proxy and the status endpoint see one Authentication and one bearer rule.
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { IdentityProvider } from '../identity/identity-provider.js';
import type { LimiterFactory } from '../limits/limiters.js';
import { LoginThrottle } from '../limits/login-throttle.js';
import type { Metrics } from '../observability/metrics.js';
import { ProviderAuth } from '../oidc/provider-auth.js';
import { ProviderConnection } from '../oidc/provider-connection.js';
import { ProviderTokenCheck } from '../oidc/provider-token-check.js';
import type { Store } from '../store/store.js';
import { TokenIssuer } from '../tokens/issuer.js';
import type { KeySet } from '../tokens/keyset.js';
import { TokenVerifier } from '../tokens/verifier.js';
import { AuthService, type Authentication } from './auth-service.js';
import { BearerAuthenticator } from './bearer-authenticator.js';
import { LoginAudit } from './login-audit.js';

export interface AuthenticationDeps {
  config: Config;
  identity: IdentityProvider;
  store: Store;
  keys: KeySet;
  limiters: LimiterFactory;
  logger: Logger;
  metrics: Metrics;
}

export interface ModeAuthentication {
  auth: Authentication;
  bearer: BearerAuthenticator;
  /** Set in local mode, where the standard OAuth endpoints are Gatehouse's own. */
  local?: AuthService;
  /** Readiness of what the mode depends on beyond the store (the provider's keys); absent: nothing. */
  ready?: () => Promise<void>;
  close(): void;
}

export function createAuthentication(deps: AuthenticationDeps): ModeAuthentication {
  const { config, identity, store, keys, limiters, logger, metrics } = deps;
  const throttle = new LoginThrottle(config.limits.login, limiters);
  const audit = new LoginAudit(logger, metrics);
  const maxEntries = config.tokens.cacheMaxEntries;
  const settings = config.identity;

  if (settings.provider === 'oidc') {
    const connection = new ProviderConnection({ settings, clockToleranceS: config.tokens.clockToleranceS, logger });
    connection.start();
    const check = new ProviderTokenCheck({ connection, store, settings, keyPrefix: config.store.keyPrefix });
    const bearer = new BearerAuthenticator({ check, store, identity, maxEntries, logger, metrics });
    const auth = new ProviderAuth({ connection, bearer, store, throttle, audit, logger, endedSessionTtlS: settings.refreshTokenTtlS });
    return {
      auth,
      bearer,
      ready: () => connection.ready(),
      close: () => {
        connection.close();
        bearer.close();
      },
    };
  }

  const { issuer, audience, accessTokenTtlS, refreshTokenTtlS, clockToleranceS } = config.tokens;
  const verifier = new TokenVerifier({ keys, issuer, audience, clockToleranceS });
  const bearer = new BearerAuthenticator({ verifier, store, identity, maxEntries, logger, metrics });
  const local = new AuthService({
    identity,
    store,
    issuer: new TokenIssuer({ keys, issuer, audience, accessTokenTtlS, refreshTokenTtlS }),
    verifier,
    bearer,
    refreshTokenTtlS,
    logger,
    throttle,
    audit,
  });
  return { auth: local, bearer, local, close: () => bearer.close() };
}
