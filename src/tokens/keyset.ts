// The signing keys in memory: the key that signs, the keys that verify, and
// the JWKS that publishes them, all derived once per change of the keys file
// and never per request. With `watch`, a change on disk (`gatehouse keys
// rotate`, the primary of a cluster) is picked up without a restart.
//
// Loading only reads the file, except in the process that decides rotations
// at start-up (see key-rotation.ts): `readOnly` is every other one.
import { EventEmitter } from 'node:events';
import type { CryptoKey, JWK, JWTHeaderParameters, KeyObject } from 'jose';
import type { Logger } from 'pino';
import type { SigningAlgorithm } from '../config/schema.js';
import { watchFile, type FileWatch } from '../files/watch-file.js';
import { importKeys, type LoadedKey } from './key-material.js';
import { newestFirst, newestUnretired, unexpired } from './key-policy.js';
import { prepareKeysFile } from './key-rotation.js';
import { KeysFileError, readKeysFile, warnIfExposed } from './keys-file.js';
import { TokenError } from './types.js';

/** Poll interval of `watch`. */
const WATCH_INTERVAL_MS = 500;
/** After a rotation could not be announced (the store did not answer), when it is tried again. */
const ANNOUNCE_RETRY_MS = 1_000;

/**
 * Phase one of a rotation shared with other instances: makes every one of
 * them trust `keys` (the new signing key among them) before this one signs
 * with it. Rejects when it cannot: the previous key keeps signing.
 */
export type BeforeSigning = (keys: readonly LoadedKey[]) => Promise<void>;

export interface SigningKey {
  kid: string;
  alg: SigningAlgorithm;
  key: CryptoKey | KeyObject;
}

/** What the issuer, the verifier and the JWKS route need of the keys. */
export interface KeySet {
  /** The algorithm new tokens are signed with. */
  readonly algorithm: SigningAlgorithm;
  signingKey(): SigningKey;
  /**
   * The key a token names in its `kid`, but only for the algorithm that key was
   * made for: a header never chooses how its own signature is checked.
   */
  getVerificationKey(header: JWTHeaderParameters): Promise<KeyObject | CryptoKey>;
  /** Public members only, each with `kid`, `alg` and `use: 'sig'`; the same object until the keys change. */
  publicJwks(): { keys: JWK[] };
  /** The algorithms of every key that still verifies; the same array until the keys change. */
  algorithms(): SigningAlgorithm[];
  /** Stops watching the file (and, shared, takes this instance out of the store). */
  close(): void | Promise<void>;
}

export interface LoadKeySetOptions {
  file: string;
  /** The configured algorithm; unless `readOnly`, a file whose signing key has another one gets a new key. */
  algorithm: SigningAlgorithm;
  /** How long a retired key keeps verifying: the refresh-token lifetime. */
  retainS: number;
  logger: Logger;
  /**
   * Never write the file: it must exist and hold a key that may sign. A
   * cluster's workers load this way, after their primary prepared the file.
   */
  readOnly?: boolean;
  /** Pick up a rotation done on disk (by the CLI or another instance) without a restart. */
  watch?: boolean;
  /** Epoch milliseconds; for tests of retirement. */
  now?: () => number;
}

export interface KeySetEvents {
  /** After each re-read of the watched file: whether its keys were taken (false: logged, the previous keys stay). */
  reload: [applied: boolean];
}

export async function loadKeySet(options: LoadKeySetOptions): Promise<WatchedKeySet> {
  const { file, logger } = options;
  const now = options.now ?? Date.now;
  const retainMs = options.retainS * 1000;
  const keys = options.readOnly
    ? await readSigningKeys(file, now(), retainMs)
    : await prepareKeysFile({ file, algorithm: options.algorithm, retainS: options.retainS, logger, now });
  await warnIfExposed(file, logger);
  const keySet = new WatchedKeySet(buildState(keys, retainMs), { ...options, now, retainMs });
  if (options.watch) keySet.watch();
  return keySet;
}

/** Everything derived from one set of keys. */
interface State {
  readonly keys: readonly LoadedKey[];
  readonly signing: SigningKey;
  readonly byKid: ReadonlyMap<string, LoadedKey>;
  readonly jwks: { keys: JWK[] };
  readonly algorithms: SigningAlgorithm[];
  /** When the next retired key runs out of its retention (epoch ms), or Infinity. */
  readonly nextExpiry: number;
}

function buildState(keys: readonly LoadedKey[], retainMs: number): State {
  const signing = newestUnretired(keys);
  if (signing === undefined) throw new Error('a key set needs a key that may sign');
  const ordered = [signing, ...keys.filter((k) => k !== signing).sort(newestFirst)];
  return {
    keys,
    signing: { kid: signing.kid, alg: signing.alg, key: signing.privateKey },
    byKid: new Map(keys.map((k) => [k.kid, k])),
    jwks: Object.freeze({ keys: ordered.map((k) => k.publicJwk) }) as { keys: JWK[] },
    algorithms: Object.freeze([...new Set(ordered.map((k) => k.alg))]) as SigningAlgorithm[],
    nextExpiry: Math.min(...keys.map((k) => (k.retiredAt === undefined ? Infinity : k.retiredAt + retainMs))),
  };
}

/** The file's keys that may still verify, imported; a missing file or one without a key that may sign is an error. */
async function readSigningKeys(file: string, now: number, retainMs: number, known: readonly LoadedKey[] = []): Promise<LoadedKey[]> {
  const stored = await readKeysFile(file);
  if (stored === null) throw new KeysFileError(file, 'missing');
  const keys = unexpired(await importKeys(file, stored.keys, known), now, retainMs);
  if (newestUnretired(keys) === undefined) throw new KeysFileError(file, 'no key may sign');
  return keys;
}

interface Context {
  file: string;
  algorithm: SigningAlgorithm;
  logger: Logger;
  now: () => number;
  retainMs: number;
}

export class WatchedKeySet extends EventEmitter<KeySetEvents> implements KeySet {
  #state: State;
  readonly #context: Context;
  #watch: FileWatch | undefined;
  #beforeSigning: BeforeSigning | undefined;
  #retry: NodeJS.Timeout | undefined;

  constructor(state: State, context: Context) {
    super();
    this.#state = state;
    this.#context = context;
    // Only a file read as it is can differ: the primary, or an operator, rotated with another config.
    this.#warnIfOtherAlgorithm();
  }

  get algorithm(): SigningAlgorithm {
    return this.#state.signing.alg;
  }

  signingKey(): SigningKey {
    return this.#state.signing;
  }

  async getVerificationKey(header: JWTHeaderParameters): Promise<KeyObject | CryptoKey> {
    const key = typeof header.kid === 'string' ? this.#current().byKid.get(header.kid) : undefined;
    if (key === undefined) throw new TokenError('unknown signing key');
    if (header.alg !== key.alg) throw new TokenError('algorithm not allowed');
    return key.publicKey;
  }

  publicJwks(): { keys: JWK[] } {
    return this.#current().jwks;
  }

  /** Whether `kid` is one of this instance's own keys that still verify. */
  knows(kid: string): boolean {
    return this.#current().byKid.has(kid);
  }

  /** This instance's own keys that still verify (the one that signs among them). */
  verifyingKeys(): readonly LoadedKey[] {
    return this.#current().keys;
  }

  /** From now on, a new signing key from the file is taken only after `hook` resolved (shared-keyset.ts). */
  setBeforeSigning(hook: BeforeSigning): void {
    this.#beforeSigning = hook;
  }

  algorithms(): SigningAlgorithm[] {
    return this.#current().algorithms;
  }

  close(): void {
    void this.#watch?.close();
    this.#watch = undefined;
    clearTimeout(this.#retry);
  }

  watch(): void {
    const { file, logger } = this.#context;
    this.#watch ??= watchFile(
      file,
      async (current) => {
        if (current.nlink === 0) logger.error({ file }, 'keys file disappeared; the keys in memory stay in use');
        else await this.#reload();
      },
      WATCH_INTERVAL_MS,
    );
  }

  #warnIfOtherAlgorithm(): void {
    const { file, algorithm, logger } = this.#context;
    const { kid, alg } = this.#state.signing;
    if (alg !== algorithm) logger.warn({ file, kid, alg, configured: algorithm }, 'the keys file signs with another algorithm than configured');
  }

  /** Drops retired keys whose retention ran out while the process kept running. */
  #current(): State {
    const state = this.#state;
    const now = this.#context.now();
    if (now < state.nextExpiry) return state;
    const kept = unexpired(state.keys, now, this.#context.retainMs);
    const dropped = state.keys.filter((k) => !kept.includes(k)).map((k) => k.kid);
    this.#state = buildState(kept, this.#context.retainMs);
    this.#context.logger.info({ kids: dropped }, 'retired signing keys reached the end of their retention');
    return this.#state;
  }

  async #reload(): Promise<void> {
    const { file, logger, now, retainMs } = this.#context;
    let applied = false;
    try {
      const keys = await readSigningKeys(file, now(), retainMs, this.#state.keys);
      if (this.#watch === undefined) return; // closed while reading
      const before = this.#state.signing.kid;
      const next = newestUnretired(keys);
      if (this.#beforeSigning && next !== undefined && next.kid !== before) {
        await this.#beforeSigning(keys);
        if (this.#watch === undefined) return;
      }
      this.#state = buildState(keys, retainMs);
      applied = true;
      const { kid, alg } = this.#state.signing;
      logger.info({ file, kid, alg, previousKid: before, keys: keys.length }, 'reloaded the signing keys');
      this.#warnIfOtherAlgorithm();
    } catch (error) {
      // KeysFileError messages name the file and the problem, never key material.
      logger.error({ file, err: error }, 'cannot reload the keys file; the keys in memory stay in use');
      // A file that reads fine but whose key could not be announced is tried again; a broken file waits for its next change.
      if (!(error instanceof KeysFileError) && this.#watch !== undefined) {
        clearTimeout(this.#retry);
        this.#retry = setTimeout(() => void this.#reload(), ANNOUNCE_RETRY_MS).unref();
      }
    }
    this.emit('reload', applied);
  }
}
