// Stage: who the caller is and what vouches for it: the signing keys (the
// keys file, shared through a Redis store; signing-keys.ts), the identity
// mode (local users or a fronted OpenID Provider, one bearer rule either way;
// identity-mode.ts), and the account page's service over the local users and
// the keys they make themselves (in the store when there is one, beside the
// users file's).
import type { Logger } from 'pino';
import { AccountService } from '../account/account-service.js';
import type { AuditEntry } from '../audit/entry.js';
import type { AuditTrail } from '../audit/open-trail.js';
import { FileApiKeys } from '../account/file-api-keys.js';
import { StoreApiKeys } from '../account/store-api-keys.js';
import type { Config } from '../config/schema.js';
import { PeerAgreement } from '../observability/peer-agreement.js';
import type { Metrics } from '../observability/metrics.js';
import type { KeySet } from '../tokens/keyset.js';
import { openSignedAuditTrail } from '../tokens/signed-audit-trail.js';
import type { SharedKeySet } from '../tokens/shared-keyset.js';
import type { PasswordVerifier } from '../users/password-check-options.js';
import type { AccessStage } from './access.js';
import { createIdentityMode, type IdentityMode } from './identity-mode.js';
import type { LiveParts } from './live-parts.js';
import { loadSigningKeys } from './signing-keys.js';
import type { StateStage } from './state.js';

export interface IdentityAndTokensDeps {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  state: StateStage;
  access: AccessStage;
  live: LiveParts;
  /** Only read the keys file, never create or rotate it: a cluster worker, whose primary prepared it. */
  readOnlyKeys: boolean;
  /** Checks passwords in place of scrypt (tests). */
  verifyPassword?: PasswordVerifier | undefined;
  /** Told every audit entry appended: the OTLP log export when tracing export is on. */
  exportAudit?: ((entry: AuditEntry) => void) | undefined;
}

export interface IdentityAndTokensStage {
  keys: KeySet;
  /** The union of every instance's keys, with a Redis store: the listeners tell peers apart by it. */
  sharedKeys: SharedKeySet | undefined;
  /** Whether this instance's view of the shared keys agrees with its peers' (readiness). */
  agreement: PeerAgreement | undefined;
  mode: IdentityMode;
  /** The deployment's audit trail: every change of who may do what, checkpoints signed with these keys. */
  audit: AuditTrail;
  /** The account page and API: the local users' own (a fronted provider manages its accounts itself). */
  account: AccountService | undefined;
  close(): Promise<void>;
}

export async function openIdentityAndTokens(deps: IdentityAndTokensDeps): Promise<IdentityAndTokensStage> {
  const { config, logger, metrics, live } = deps;
  const { store, limiters } = deps.state;
  // Only local mode signs tokens; with Redis, every instance's published keys verify (tokens/shared-keyset.ts).
  const { keys, shared: sharedKeys } = await loadSigningKeys(config, store, logger, { readOnly: deps.readOnlyKeys });
  const agreement = sharedKeys && new PeerAgreement(sharedKeys, metrics, logger);
  const audit = await openSignedAuditTrail(config, store, keys, logger, deps.exportAudit);
  // Keys users make for themselves live in Redis when there is one (account/), beside the users file's.
  const storeKeys = store.apiKeys ? new StoreApiKeys(store.apiKeys) : undefined;
  const mode = await createIdentityMode({
    attempts: deps.access.abuse,
    trail: audit.appender,
    config,
    store,
    keys,
    limiters,
    clientAddress: deps.access.clientAddress,
    logger,
    metrics,
    passwords: {
      hashing: deps.access.passwordHashing,
      ...(deps.verifyPassword && { verifyPassword: deps.verifyPassword }),
      ...(storeKeys && { storeKeys }),
      onApiKeyUsed: (keyId) => live.recordApiKeyUse(keyId),
    },
  });
  const account = accountOf(deps, mode, storeKeys, audit);
  live.recordApiKeyUsesIn(storeKeys ?? account?.keys);
  return {
    keys,
    sharedKeys,
    agreement,
    mode,
    audit,
    account: account?.service,
    async close() {
      await keys.close();
      await mode.close();
      await audit.close();
    },
  };
}

/** The account service when `account.enabled` in local mode: over the store's keys, or the users file's. */
function accountOf(
  { config, logger, state }: IdentityAndTokensDeps,
  mode: IdentityMode,
  storeKeys: StoreApiKeys | undefined,
  audit: AuditTrail,
): { service: AccountService; keys: StoreApiKeys | FileApiKeys } | undefined {
  if (!config.account.enabled || !mode.local) return undefined;
  const fileKeys = new FileApiKeys(mode.local.users);
  const keys = storeKeys ?? fileKeys;
  const service = new AccountService({
    identity: mode.local.users,
    keys,
    fileKeys,
    store: state.store,
    settings: config.account,
    logger,
    audit: audit.appender,
    provider: mode.local.provider,
  });
  return { service, keys };
}
