// What the public listener answers itself, registered in one fixed order: the
// spec's login, refresh and logout; a fronted provider's back-channel logout;
// Gatehouse's own OpenID Provider endpoints (local mode only: fronting a
// provider, it does not pose as one); the account page and API; the status of
// asynchronous requests. Everything else on the public listener is the proxy's.
import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../account/account-service.js';
import { accountPage } from '../account/account-page.js';
import { accountRoutes, type AccountRoutesOptions } from '../account/account-routes.js';
import type { SecondFactors } from '../factors/second-factors.js';
import type { Passkeys } from '../factors/passkeys.js';
import { passkeyRoutes } from '../account/passkey-routes.js';
import { authRoutes } from '../auth/auth-routes.js';
import type { AuthService, Authentication } from '../auth/auth-service.js';
import type { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import { tokenEndpoint } from '../auth/token-endpoint.js';
import type { Config } from '../config/schema.js';
import type { ClientAddress } from '../http/client-address.js';
import { errorHandler } from '../http/error-handler.js';
import type { FairWorkQueue } from '../limits/fair-work-queue.js';
import type { LogoutTokenThrottle } from '../limits/logout-token-throttle.js';
import type { LogoutTokenReceiver } from '../oidc/backchannel-logout.js';
import { backchannelLogoutRoute } from '../oidc/backchannel-logout-route.js';
import type { SessionHoldings } from '../proxy/session-holdings.js';
import type { RequestTracker } from '../async-requests/request-tracker.js';
import { statusRoutes } from '../async-requests/status-routes.js';
import type { UpstreamReconciler } from '../async-requests/upstream-reconciler.js';
import { canonicalIssuer } from '../tokens/issuer.js';
import type { KeySet } from '../tokens/keyset.js';
import { wellKnownRoutes } from '../tokens/well-known-routes.js';

export interface GatewayEndpointParts {
  config: Config;
  auth: Authentication;
  bearer: BearerAuthenticator;
  clientAddress: ClientAddress;
  keys: KeySet;
  passwordHashing: FairWorkQueue;
  holdings: SessionHoldings;
  requests: RequestTracker;
  reconciler: UpstreamReconciler;
  /** Local mode: Gatehouse's own token service, behind the OAuth endpoints. */
  tokenService?: AuthService | undefined;
  /** The account page and API, when enabled (local mode). */
  account?: AccountService | undefined;
  /** The caller's own quotas, for the account API. */
  ownLimits?: AccountRoutesOptions['ownLimits'];
  /** Local users' second factors, enrolled through the account API. */
  factors?: SecondFactors | undefined;
  /** Local users' passkeys (`account.passkeys`), registered through the account API and used at login. */
  passkeys?: Passkeys | undefined;
  /** A fronted provider's back-channel logout (oidc mode). */
  backchannelLogout?: LogoutTokenReceiver | undefined;
  /** Refused logout tokens per address, with `backchannelLogout`. */
  logoutTokenThrottle?: LogoutTokenThrottle | undefined;
}

export async function registerGatewayEndpoints(app: FastifyInstance, parts: GatewayEndpointParts): Promise<void> {
  const { config, bearer, clientAddress } = parts;
  const bodyLimitBytes = config.server.apiBodyLimitBytes;
  await app.register(errorHandler);
  // Local mode binds tokens to the key of a login's or refresh's DPoP proof.
  const dpop = parts.tokenService?.tokenRequestProofs;
  await app.register(authRoutes, { auth: parts.auth, bodyLimitBytes, clientAddress, ...(dpop && { dpop }) });
  // A fronted provider's logout reaches us (OpenID Connect Back-Channel Logout), throttled as the token endpoint is.
  if (parts.backchannelLogout && parts.logoutTokenThrottle) {
    const throttle = parts.logoutTokenThrottle;
    await app.register(backchannelLogoutRoute, { logout: parts.backchannelLogout, throttle, clientAddress, bodyLimitBytes });
  }
  if (parts.tokenService) {
    await app.register(wellKnownRoutes, { keys: parts.keys, tokens: config.tokens });
    await app.register(tokenEndpoint, {
      auth: parts.tokenService,
      logins: parts.auth,
      bodyLimitBytes,
      clients: config.tokens.clients,
      issuer: canonicalIssuer(config.tokens.issuer),
      hashing: parts.passwordHashing,
      clientAddress,
      ...(dpop && { dpop }),
    });
  }
  if (parts.account) {
    const { ownLimits } = parts;
    const { maxKeyLifetimeDays } = config.account;
    await app.register(accountRoutes, { account: parts.account, bearer, bodyLimitBytes, maxKeyLifetimeDays, ownLimits, factors: parts.factors });
    await app.register(accountPage, { provider: parts.account.provider, passkeys: parts.passkeys !== undefined });
    if (parts.passkeys && parts.tokenService) {
      await app.register(passkeyRoutes, { passkeys: parts.passkeys, auth: parts.tokenService, bearer, bodyLimitBytes, clientAddress });
    }
  }
  await app.register(statusRoutes, {
    bearer,
    holdings: parts.holdings,
    tracker: parts.requests,
    reconciler: parts.reconciler,
    retryAfterS: config.requests.retryAfterS,
    maxWaitS: config.requests.maxWaitS,
    bodyLimitBytes,
  });
}
