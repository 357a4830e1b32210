// Chooses the key set a gateway uses: its keys file alone (one instance, or
// instances sharing the file), or with a Redis store the union of every
// instance's published keys (shared-keyset.ts).
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { fileDigest } from '../files/file-digest.js';
import type { KeysStore, StoreLifecycle } from '../store/store.js';
import { loadKeySet, type KeySet, type WatchedKeySet } from '../tokens/keyset.js';
import { NO_SIGNING_KEYS } from '../tokens/no-keys.js';
import { SharedKeySet, type SharedKeySetOptions } from '../tokens/shared-keyset.js';

/** A store that may share keys: only a Redis one does. */
type KeySharingStore = KeysStore & Pick<StoreLifecycle, 'kind'>;

/** The shared set, started (its keys published, its peers' read), or undefined when the store is not shared. */
export async function shareKeys(config: Config, store: KeySharingStore, local: WatchedKeySet, logger: Logger): Promise<SharedKeySet | undefined> {
  if (store.kind !== 'redis' || store.sharedKeys === undefined) return undefined;
  const identity = config.identity;
  // Users held in the store: each instance's copy of the file only seeds it; app/identity-mode.ts tells the view's digest instead.
  const usersFile = identity.provider === 'local' && identity.usersIn !== 'store' ? identity.usersFile : undefined;
  const shared = new SharedKeySet({
    local,
    records: store.sharedKeys,
    // The host name is the pod's name in Kubernetes: logs and /readyz name instances as operators know them.
    instance: `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
    ...sealSecrets(config, logger),
    retainMs: config.tokens.refreshTokenTtlS * 1000,
    logger: logger.child({ component: 'shared-keys' }),
    ...(usersFile !== undefined && { usersDigest: () => fileDigest(usersFile) }),
  });
  await shared.start();
  return shared;
}

/**
 * The seal's secrets: `tokens.keySealSecret`, or as before it had a setting
 * of its own the service token (the same MAC key either way, so naming the
 * current service token as the seal secret changes nothing in the store:
 * the first step of giving the seal a secret of its own).
 */
function sealSecrets(config: Config, logger: Logger): Pick<SharedKeySetOptions, 'secret' | 'acceptedSecrets'> {
  const { keySealSecret, keySealSecretNext: next, keySealSecretPrevious: previous } = config.tokens;
  const { serviceToken, serviceTokenPrevious } = config.requests;
  if (keySealSecret === undefined && serviceToken !== undefined) {
    const rotating = serviceTokenPrevious !== undefined;
    (rotating ? logger.warn : logger.info).call(
      logger,
      'the public keys shared through the store are sealed with a key derived from requests.serviceToken (no tokens.keySealSecret): ' +
        (rotating
          ? "rotating the service token changes the seal too, and instances on different tokens ignore each other's keys; "
          : 'a new service token would change the seal too; ') +
        'set GATEHOUSE_KEY_SEAL_SECRET to the current service token first (docs/operations/rotations.md)',
    );
  }
  return { secret: keySealSecret ?? serviceToken, acceptedSecrets: { next, previous } };
}

export interface SigningKeys {
  /** What signs and verifies: the shared set, the keys file's, or none (fronting a provider). */
  keys: KeySet;
  /** The keys file's set; undefined in oidc mode, where no keys file is read or created. */
  file: WatchedKeySet | undefined;
  /** The union of every instance's keys, with a Redis store. */
  shared: SharedKeySet | undefined;
}

/** Loads the keys file (local mode only: fronting a provider, Gatehouse signs nothing) and shares it when the store is. */
export async function loadSigningKeys(config: Config, store: KeySharingStore, logger: Logger, options: { readOnly: boolean }): Promise<SigningKeys> {
  const keysFile = config.tokens.keysFile;
  if (keysFile === undefined) return { keys: NO_SIGNING_KEYS, file: undefined, shared: undefined };
  const file = await loadKeySet({
    file: keysFile,
    algorithm: config.tokens.algorithm,
    retainS: config.tokens.refreshTokenTtlS,
    logger,
    readOnly: options.readOnly,
    watch: true,
  });
  const shared = await shareKeys(config, store, file, logger);
  return { keys: shared ?? file, file, shared };
}
