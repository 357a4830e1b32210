// Several identity providers at once (`identity.provider: several`): builds
// each provider's own parts (the local users and Gatehouse's token service;
// for each OpenID Provider its connection, token check, login and
// back-channel logout), then the one bearer rule over all of them, whose
// first check picks the provider by the token's issuer (issuer-token-check.ts).
// A provider that cannot be reached fails its own logins and checks only.
// Why: docs/decisions/0025-several-identity-providers.md
import type { Logger } from 'pino';
import { AuthService, type Authentication } from '../auth/auth-service.js';
import { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import type { LoginAudit } from '../auth/login-audit.js';
import { LoginGuard } from '../auth/login-guard.js';
import { SessionTokenCheck } from '../auth/token-check.js';
import type { Config, OidcIdentityConfig } from '../config/schema.js';
import type { LocalProviderEntry, OidcProviderEntry } from '../config/providers-schema.js';
import type { DpopProofCheck } from '../dpop/proof-check.js';
import type { IdentityProvider } from '../users/identity-provider.js';
import type { LocalIdentityConfig, LocalIdentityProvider } from '../users/local-provider.js';
import type { UsersLoss } from '../users/store-users.js';
import type { LoginThrottle } from '../limits/login-throttle.js';
import type { Metrics } from '../observability/metrics.js';
import type { AuditRecorder } from '../audit/recorder.js';
import { SecondFactors } from '../factors/second-factors.js';
import { BackchannelLogout, type LogoutTokenReceiver } from '../oidc/backchannel-logout.js';
import { ProviderAuth } from '../oidc/provider-auth.js';
import { ProviderConnection } from '../oidc/provider-connection.js';
import { ProviderIdentity } from '../oidc/provider-identity.js';
import { providerSessionPrefix, ProviderTokenCheck } from '../oidc/provider-token-check.js';
import { SessionRoles } from '../oidc/session-roles.js';
import type { Store } from '../store/store.js';
import { canonicalIssuer, TokenIssuer } from '../tokens/issuer.js';
import type { KeySet } from '../tokens/keyset.js';
import type { TokenSet } from '../tokens/types.js';
import { TokenVerifier } from '../tokens/verifier.js';
import { BackchannelLogouts } from './backchannel-logouts.js';
import { IssuerTokenCheck, type IssuerEntry } from './issuer-token-check.js';
import { ProviderIdentities } from './provider-identities.js';
import { SeveralProvidersAuth } from './several-providers-auth.js';
import { TokenOrigins } from './token-origins.js';

type SeveralIdentityConfig = Extract<Config['identity'], { provider: 'several' }>;

export interface SeveralProvidersDeps {
  config: Config;
  /** The deployment's audit trail: sessions a provider's back-channel logout ended. */
  trail?: AuditRecorder;
  settings: SeveralIdentityConfig;
  store: Store;
  keys: KeySet;
  logger: Logger;
  metrics: Metrics;
  throttle: LoginThrottle;
  audit: LoginAudit;
  dpop: DpopProofCheck;
  /** Opens the local users as local mode does (the users file, or the store). */
  openLocalUsers(settings: LocalIdentityConfig): Promise<{ users: LocalIdentityProvider; usersLoss?: () => UsersLoss | undefined }>;
}

/** What the identity mode hands on: the same parts as with one provider. */
export interface SeveralProviders {
  identity: IdentityProvider;
  auth: Authentication;
  bearer: BearerAuthenticator;
  /** The local users among the providers, with their provider's name (the account page is theirs only). */
  local?: { users: LocalIdentityProvider; usersFile: string; service: AuthService; factors: SecondFactors; provider: string };
  backchannelLogout?: LogoutTokenReceiver;
  usersLoss?: () => UsersLoss | undefined;
  close(): Promise<void>;
}

interface OidcParts {
  entry: OidcProviderEntry;
  settings: OidcIdentityConfig;
  connection: ProviderConnection;
  identity: ProviderIdentity;
  check: ProviderTokenCheck;
}

export async function createSeveralProviders(deps: SeveralProvidersDeps): Promise<SeveralProviders> {
  const { config, settings, store, keys, logger, metrics, throttle, audit, dpop } = deps;
  const maxEntries = config.tokens.cacheMaxEntries;
  const { clockToleranceS } = config.tokens;
  const oidc = settings.providers.filter((entry): entry is OidcProviderEntry => entry.type === 'oidc').map((entry) => oidcParts(entry, deps));
  const localEntry = settings.providers.find((entry): entry is LocalProviderEntry => entry.type === 'local');

  const origins = new TokenOrigins({ store, maxEntries });
  const issuerEntries: IssuerEntry[] = oidc.map(({ entry, connection, check }) => ({
    name: entry.name,
    issuer: entry.issuer,
    check,
    holdsKey: (kid) => connection.held?.verifier.holdsKey(kid) ?? false,
  }));
  const identities = new Map<string, IdentityProvider>(oidc.map(({ entry, identity }) => [entry.name, identity]));
  const local = localEntry && (await deps.openLocalUsers(localSettings(localEntry)));
  const { issuer, audience, accessTokenTtlS, refreshTokenTtlS } = config.tokens;
  const verifier = new TokenVerifier({ keys, issuer, audience, clockToleranceS });
  if (localEntry && local) {
    identities.set(localEntry.name, local.users);
    issuerEntries.push({
      name: localEntry.name,
      issuer: canonicalIssuer(issuer),
      check: new SessionTokenCheck(verifier, store, localEntry.name),
      holdsKey: (kid) => keys.publicJwks().keys.some((key) => key.kid === kid),
    });
  }
  const dispatch = new IssuerTokenCheck(issuerEntries, origins);
  const identity = new ProviderIdentities(identities, localEntry?.name);
  const bearer = new BearerAuthenticator({ check: dispatch, store, identity, maxEntries, logger, metrics, dpop });

  const byName = new Map<string, Authentication>();
  const logouts = new Map<string, LogoutTokenReceiver>();
  for (const { entry, settings: one, connection } of oidc) {
    const endedSessionTtlS = one.refreshTokenTtlS;
    // Its opaque tokens are known as its own from the moment it hands them out.
    const onTokens = async (tokens: TokenSet) => {
      await origins.remember(tokens.access_token, entry.name, endedSessionTtlS * 1000);
      await origins.remember(tokens.refresh_token, entry.name, endedSessionTtlS * 1000);
    };
    byName.set(entry.name, new ProviderAuth({ connection, bearer, store, throttle, audit, logger, endedSessionTtlS, onTokens, acrRanks: one.acrValues }));
    const sessionPrefix = providerSessionPrefix(entry.name);
    logouts.set(
      entry.issuer,
      new BackchannelLogout({
        connection,
        store,
        clientId: one.clientId,
        clockToleranceS,
        endedSessionTtlS,
        logger,
        sessionPrefix,
        ...(deps.trail && { trail: deps.trail }),
      }),
    );
  }
  let service: AuthService | undefined;
  let factors: SecondFactors | undefined;
  if (localEntry && local) {
    const { policy } = config.tokens.dpop;
    const tokenIssuer = new TokenIssuer({ keys, issuer, audience, accessTokenTtlS, refreshTokenTtlS, acr: config.tokens.acr });
    // Second factors live with the local users; the codes used, in the store (as with the local provider alone).
    factors = new SecondFactors({ users: local.users, store, ...(deps.trail && { trail: deps.trail }) });
    const guarded = { throttle, audit, dpop: { check: dpop, required: policy === 'required' } };
    const provider = localEntry.name;
    service = new AuthService({ identity: local.users, store, issuer: tokenIssuer, verifier, bearer, refreshTokenTtlS, logger, ...guarded, provider, factors });
    byName.set(localEntry.name, service);
  }
  const defaultProvider = settings.defaultProvider ?? settings.providers[0]!.name;
  const auth = new SeveralProvidersAuth({ byName, defaultProvider, bearer, dispatch, guard: new LoginGuard(throttle, audit) });
  return {
    identity,
    auth,
    bearer,
    ...(service &&
      factors &&
      localEntry &&
      local && { local: { users: local.users, usersFile: localEntry.usersFile, service, factors, provider: localEntry.name } }),
    ...(logouts.size > 0 && { backchannelLogout: new BackchannelLogouts(logouts) }),
    ...(local?.usersLoss && { usersLoss: local.usersLoss }),
    close: async () => {
      for (const { connection } of oidc) connection.close();
      bearer.close();
      await identity.close();
    },
  };
}

/** One OpenID Provider's connection and first check, as `identity.provider: oidc` has them, its sessions kept apart by its name. */
function oidcParts(entry: OidcProviderEntry, deps: SeveralProvidersDeps): OidcParts {
  const { config, store, logger } = deps;
  const { name: _name, type: _type, ...rest } = entry;
  const settings: OidcIdentityConfig = { provider: 'oidc', ...rest };
  const sessionRoles = new SessionRoles({ store, maxEntries: config.tokens.cacheMaxEntries, keepMs: settings.refreshTokenTtlS * 1000 });
  const connection = new ProviderConnection({ settings, clockToleranceS: config.tokens.clockToleranceS, logger: logger.child({ provider: entry.name }) });
  connection.start();
  const check = new ProviderTokenCheck({ connection, store, settings, sessionRoles, provider: entry.name });
  return { entry, settings, connection, identity: new ProviderIdentity(sessionRoles), check };
}

function localSettings(entry: LocalProviderEntry): LocalIdentityConfig {
  const { name: _name, type: _type, ...rest } = entry;
  return { provider: 'local', ...rest };
}
