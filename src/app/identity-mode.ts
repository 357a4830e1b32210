// The one place that picks the identity mode, from the `identity` section of
// the configuration: local (Gatehouse checks credentials against its users
// file and signs its own tokens) or oidc (a fronted OpenID Provider does both,
// and the gateway verifies its tokens). Everything else asks the mode what it
// has: the spec's endpoints, the proxy and the status endpoint see one
// Authentication and one bearer rule; only local mode has Gatehouse's own
// OAuth endpoints and the account page.
import type { Logger } from 'pino';
import { AuthService, type Authentication } from '../auth/auth-service.js';
import { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import { LoginAudit, type AttemptRecord } from '../auth/login-audit.js';
import type { AuditRecorder } from '../audit/recorder.js';
import type { Config } from '../config/schema.js';
import { DpopNonces } from '../dpop/nonces.js';
import { DpopProofCheck } from '../dpop/proof-check.js';
import type { ClientAddress } from '../http/client-address.js';
import type { IdentityProvider } from '../users/identity-provider.js';
import { LocalIdentityProvider } from '../users/local-provider.js';
import type { PasswordCheckOptions } from '../users/password-check-options.js';
import { openStoreUsers, type UsersLoss } from '../users/store-users.js';
import type { LimiterFactory } from '../limits/limiters.js';
import { LoginThrottle } from '../limits/login-throttle.js';
import { LogoutTokenThrottle } from '../limits/logout-token-throttle.js';
import type { Metrics } from '../observability/metrics.js';
import { BackchannelLogout, type LogoutTokenReceiver } from '../oidc/backchannel-logout.js';
import { ProviderAuth } from '../oidc/provider-auth.js';
import { ProviderConnection } from '../oidc/provider-connection.js';
import { ProviderIdentity } from '../oidc/provider-identity.js';
import { ProviderTokenCheck } from '../oidc/provider-token-check.js';
import { SessionRoles } from '../oidc/session-roles.js';
import { createSeveralProviders } from '../providers/several-providers.js';
import { SecondFactors } from '../factors/second-factors.js';
import type { Store } from '../store/store.js';
import { acrValuesSupported } from '../tokens/authentication-context.js';
import { TokenIssuer } from '../tokens/issuer.js';
import { SharedKeySet } from '../tokens/shared-keyset.js';
import type { KeySet } from '../tokens/keyset.js';
import { TokenVerifier } from '../tokens/verifier.js';

export interface IdentityModeDeps {
  config: Config;
  store: Store;
  keys: KeySet;
  limiters: LimiterFactory;
  /** The client's address as the listener trusts it (access.ts): DPoP proofs name the URL the client saw. */
  clientAddress: ClientAddress;
  logger: Logger;
  metrics: Metrics;
  /** How local passwords are checked (the hashing queue, the store's API keys); unused by a fronted provider. */
  passwords: PasswordCheckOptions;
  /** Told of refused and admitted logins and refreshes by address (limits/abuse-guard.ts). */
  attempts?: AttemptRecord;
  /** The deployment's audit trail: lockouts started, sessions a provider ended. */
  trail?: AuditRecorder;
}

export interface IdentityMode {
  identity: IdentityProvider;
  auth: Authentication;
  bearer: BearerAuthenticator;
  /** The levels (`acr`) this mode's tokens carry, lowest first: what a route's `authorize.acr` is ranked by. */
  acrRanks: readonly string[];
  /** Local mode only: Gatehouse's own users and token service (OAuth endpoints, discovery, the account page). */
  local?: { users: LocalIdentityProvider; usersFile: string; service: AuthService; factors: SecondFactors; provider?: string };
  /** Fronting a provider: its back-channel logout tokens end its sessions here (oidc/backchannel-logout.ts). */
  backchannelLogout?: LogoutTokenReceiver;
  /** Refused logout tokens per address, throttled as the token endpoint is (with `backchannelLogout`). */
  logoutTokenThrottle?: LogoutTokenThrottle;
  /** Readiness of what the mode depends on beyond the store (the provider's keys); absent: nothing. */
  ready?: () => Promise<void>;
  /** With the users held in the store: whether they are lost (readiness says so); absent in other modes. */
  usersLoss?: () => UsersLoss | undefined;
  close(): Promise<void>;
}

export async function createIdentityMode(deps: IdentityModeDeps): Promise<IdentityMode> {
  const { config, store, keys, limiters, logger, metrics } = deps;
  const throttle = new LoginThrottle(config.limits.login, limiters);
  const audit = new LoginAudit(logger, metrics, deps.attempts, deps.trail);
  const maxEntries = config.tokens.cacheMaxEntries;
  const settings = config.identity;
  // DPoP proofs (RFC 9449): the URL they name is the one the client saw, through trusted proxies.
  const { algorithms, proofWindowS, policy, requireNonce, nonceRotateS } = config.tokens.dpop;
  const dpop = new DpopProofCheck({
    algorithms,
    proofWindowS,
    store,
    clientAddress: deps.clientAddress,
    ...(requireNonce && { nonces: new DpopNonces({ store, rotateS: nonceRotateS }) }),
  });

  // Several providers at once, chosen by issuer: built by providers/several-providers.ts.
  if (settings.provider === 'several') {
    const several = await createSeveralProviders({
      config,
      settings,
      store,
      keys,
      logger,
      metrics,
      throttle,
      audit,
      dpop,
      openLocalUsers: (local) => openLocalUsers(local, deps),
      ...(deps.trail && { trail: deps.trail }),
    });
    // Routes rank levels by Gatehouse's own (the local users'); a provider's levels are met by their exact names.
    const acrRanks = acrValuesSupported(config.tokens.acr);
    if (!several.backchannelLogout) return { ...several, acrRanks };
    return { ...several, acrRanks, logoutTokenThrottle: new LogoutTokenThrottle(config.limits.login, limiters) };
  }

  if (settings.provider === 'oidc') {
    // Every token of a provider session holds the session's roles, as its newest token says (an introspected refresh token names none).
    const sessionRoles = new SessionRoles({ store, maxEntries, keepMs: settings.refreshTokenTtlS * 1000 });
    const identity = new ProviderIdentity(sessionRoles);
    const connection = new ProviderConnection({ settings, clockToleranceS: config.tokens.clockToleranceS, logger });
    connection.start();
    const check = new ProviderTokenCheck({ connection, store, settings, sessionRoles });
    const bearer = new BearerAuthenticator({ check, store, identity, maxEntries, logger, metrics, dpop });
    const auth = new ProviderAuth({
      connection,
      bearer,
      store,
      throttle,
      audit,
      logger,
      endedSessionTtlS: settings.refreshTokenTtlS,
      acrRanks: settings.acrValues,
    });
    const { clockToleranceS } = config.tokens;
    const backchannelLogout = new BackchannelLogout({
      connection,
      store,
      clientId: settings.clientId,
      clockToleranceS,
      endedSessionTtlS: settings.refreshTokenTtlS,
      logger,
      ...(deps.trail && { trail: deps.trail }),
    });
    return {
      identity,
      auth,
      bearer,
      acrRanks: settings.acrValues,
      backchannelLogout,
      logoutTokenThrottle: new LogoutTokenThrottle(config.limits.login, limiters),
      ready: () => connection.ready(),
      close: async () => {
        connection.close();
        bearer.close();
        await identity.close();
      },
    };
  }

  const { users, usersLoss } = await openLocalUsers(settings, deps);
  const { issuer, audience, accessTokenTtlS, refreshTokenTtlS, clockToleranceS } = config.tokens;
  const verifier = new TokenVerifier({ keys, issuer, audience, clockToleranceS });
  const bearer = new BearerAuthenticator({ verifier, store, identity: users, maxEntries, logger, metrics, dpop });
  // Second factors live with the users; the codes used, in the store (every instance refuses a code taken once).
  const factors = new SecondFactors({ users, store, ...(deps.trail && { trail: deps.trail }) });
  const service = new AuthService({
    identity: users,
    store,
    issuer: new TokenIssuer({ keys, issuer, audience, accessTokenTtlS, refreshTokenTtlS, acr: config.tokens.acr }),
    verifier,
    bearer,
    refreshTokenTtlS,
    logger,
    throttle,
    audit,
    dpop: { check: dpop, required: policy === 'required' },
    factors,
  });
  return {
    identity: users,
    auth: service,
    bearer,
    acrRanks: acrValuesSupported(config.tokens.acr),
    local: { users, usersFile: settings.usersFile, service, factors },
    ...(usersLoss && { usersLoss }),
    close: async () => {
      bearer.close();
      await users.close();
    },
  };
}

/**
 * Gatehouse's own users: the users file, or the store (`identity.usersIn`).
 * In the store, each instance tells its peers the digest of the users it
 * holds now (not of its copy of the file, which only seeded the store), so a
 * view that missed a change is seen (observability/peer-agreement.ts).
 */
async function openLocalUsers(
  settings: Extract<Config['identity'], { provider: 'local' }>,
  deps: IdentityModeDeps,
): Promise<{ users: LocalIdentityProvider; usersLoss?: () => UsersLoss | undefined }> {
  if (settings.usersIn !== 'store') return { users: await LocalIdentityProvider.open(settings, deps.logger, deps.passwords) };
  const source = await openStoreUsers(deps.store, {
    usersFile: settings.usersFile,
    logger: deps.logger,
    rereadMs: settings.usersRereadS * 1000,
    onLossChange: (loss) => deps.metrics.usersLost.set(loss ? 1 : 0),
  });
  const users = await LocalIdentityProvider.open(settings, deps.logger, deps.passwords, source);
  if (deps.keys instanceof SharedKeySet) {
    deps.keys.useUsersDigest(async () => users.viewDigest());
    await deps.keys.heartbeatNow();
  }
  return { users, usersLoss: () => source.loss };
}
