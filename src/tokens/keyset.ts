// The signing keys. They live in one JSON file of private JWKs, each named by
// the RFC 7638 thumbprint of its public key. The newest unretired key signs;
// a retired key keeps verifying for `retainS` (the refresh-token lifetime),
// because tokens it signed before its retirement may be valid that long, and
// is dropped after that: it can no longer have signed anything still valid.
//
// Only the CLI (`gatehouse keys rotate`), a first start and a start with a
// changed `tokens.algorithm` write the file; a watching gateway only reads it,
// so several instances can share it.
import { randomUUID } from 'node:crypto';
import { type Stats, unwatchFile, watchFile } from 'node:fs';
import { link, mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import {
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type CryptoKey,
  type JWK,
  type JWTHeaderParameters,
  type KeyObject,
} from 'jose';
import type { Logger } from 'pino';
import { SIGNING_ALGORITHMS, type SigningAlgorithm } from '../config/schema.js';
import { TokenError } from './types.js';

const FILE_VERSION = 1;
/** Poll interval of `watch`; `fs.watch` misses renames on some file systems, polling does not. */
const WATCH_INTERVAL_MS = 500;
/** RFC 7518 3.3 asks for at least 2048 bits; more only slows every signature down. */
const RSA_MODULUS_LENGTH = 2048;

/** The public members of each key type: what the JWKS may show and what RFC 7638 hashes. */
const PUBLIC_MEMBERS: Readonly<Record<string, readonly string[]>> = {
  OKP: ['crv', 'kty', 'x'],
  EC: ['crv', 'kty', 'x', 'y'],
  RSA: ['e', 'kty', 'n'],
};

/** One key as the file stores it. */
export interface StoredKey {
  kid: string;
  alg: SigningAlgorithm;
  /** ISO 8601. */
  createdAt: string;
  /** ISO 8601; absent while the key may sign. */
  retiredAt?: string;
  /** The private JWK. */
  jwk: JWK;
}

export interface KeysFile {
  version: typeof FILE_VERSION;
  keys: StoredKey[];
}

/** What `gatehouse keys list` shows of a key: never any key material. */
export interface KeyInfo {
  kid: string;
  alg: SigningAlgorithm;
  createdAt: string;
  retiredAt?: string;
  /** `signing`: signs new tokens; `retired`: verifies only; `expired`: dropped at the next load or write. */
  status: 'signing' | 'retired' | 'expired';
}

export interface SigningKey {
  kid: string;
  alg: SigningAlgorithm;
  key: CryptoKey | KeyObject;
}

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
  /** Stops watching the file. */
  close(): void;
}

export interface LoadKeySetOptions {
  file: string;
  /** The configured algorithm; a file whose signing key has another one gets a new key. */
  algorithm: SigningAlgorithm;
  /** How long a retired key keeps verifying: the refresh-token lifetime. */
  retainS: number;
  logger: Logger;
  /** Pick up a rotation done on disk (by the CLI or another instance) without a restart. */
  watch?: boolean;
  /** Epoch milliseconds; for tests of retirement. */
  now?: () => number;
}

export interface RotateKeysOptions {
  file: string;
  algorithm: SigningAlgorithm;
  retainS: number;
  now?: () => number;
}

/** The keys file is missing, unreadable or not what this version writes. */
export class KeysFileError extends Error {
  readonly file: string;

  constructor(file: string, problem: string, options?: { cause?: unknown }) {
    super(`keys file ${file}: ${problem}`, options);
    this.name = 'KeysFileError';
    this.file = file;
  }
}

export async function loadKeySet(options: LoadKeySetOptions): Promise<KeySet> {
  const { file, algorithm, logger } = options;
  const now = options.now ?? Date.now;
  const retainMs = options.retainS * 1000;

  let stored = await readKeysFile(file);
  if (stored === null) {
    const key = await generateStoredKey(algorithm, now());
    if (await writeKeysFile(file, { version: FILE_VERSION, keys: [key] }, { exclusive: true })) {
      logger.info({ file, kid: key.kid, alg: key.alg }, 'generated a signing key');
    }
    // Created meanwhile by another instance sharing the file: its key wins, so all sign alike.
    stored = await readKeysFile(file);
    if (stored === null) throw new KeysFileError(file, 'disappeared right after it was created');
  }
  await warnIfExposed(file, logger);

  let keys = await importKeys(file, stored.keys);
  keys = unexpired(keys, now(), retainMs);
  const current = newestUnretired(keys);
  if (current === undefined || current.alg !== algorithm) {
    // Rotating here (rather than refusing to start) is what makes a change of
    // `tokens.algorithm` a one-line config edit: the old key keeps verifying.
    const rotated = withNewKey(
      { version: FILE_VERSION, keys: keys.map((k) => k.stored) },
      await generateStoredKey(algorithm, now()),
      now(),
    );
    await writeKeysFile(file, rotated);
    keys = await importKeys(file, rotated.keys, keys);
    const signing = newestUnretired(keys)!;
    logger.info(
      { file, kid: signing.kid, alg: signing.alg, previousKid: current?.kid, previousAlg: current?.alg },
      current === undefined ? 'no key may sign: generated a signing key' : 'signing algorithm changed: rotated the signing key',
    );
  }

  const keySet = new FileKeySet(buildState(keys, retainMs), { now, retainMs, algorithm, logger, file });
  if (options.watch) keySet.watch();
  return keySet;
}

/** Makes a new key of `algorithm` the signing key; the previous one verifies for `retainS` more. */
export async function rotateKeys(options: RotateKeysOptions): Promise<{ kid: string }> {
  const now = options.now ?? Date.now;
  const stored = (await readKeysFile(options.file)) ?? { version: FILE_VERSION, keys: [] };
  // Importing checks every key before the file is rewritten with them.
  const keys = unexpired(await importKeys(options.file, stored.keys), now(), options.retainS * 1000);
  const key = await generateStoredKey(options.algorithm, now());
  await writeKeysFile(options.file, withNewKey({ version: FILE_VERSION, keys: keys.map((k) => k.stored) }, key, now()));
  return { kid: key.kid };
}

/** The keys in the file, newest first; an empty list when there is no file. */
export async function listKeys(options: { file: string; retainS: number; now?: () => number }): Promise<KeyInfo[]> {
  const stored = await readKeysFile(options.file);
  if (stored === null) return [];
  const now = (options.now ?? Date.now)();
  const signing = newestUnretired(stored.keys.map((s, index) => ({ ...metadata(s), index })));
  return stored.keys
    .map((s, index) => ({ s, index }))
    .sort((a, b) => Date.parse(b.s.createdAt) - Date.parse(a.s.createdAt) || b.index - a.index)
    .map(({ s, index }) => ({
      kid: s.kid,
      alg: s.alg,
      createdAt: s.createdAt,
      ...(s.retiredAt !== undefined && { retiredAt: s.retiredAt }),
      status:
        index === signing?.index
          ? 'signing'
          : s.retiredAt !== undefined && Date.parse(s.retiredAt) + options.retainS * 1000 <= now
            ? 'expired'
            : 'retired',
    }));
}

// ---------------------------------------------------------------------------
// The key set in memory.

interface LoadedKey {
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  /** Epoch milliseconds. */
  readonly createdAt: number;
  readonly retiredAt?: number;
  /** The position in the file: breaks ties between keys created in the same millisecond. */
  readonly index: number;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
  readonly publicJwk: JWK;
  readonly stored: StoredKey;
}

/** Everything derived from one set of keys, built once per change, never per request. */
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

interface FileKeySetContext {
  now: () => number;
  retainMs: number;
  algorithm: SigningAlgorithm;
  logger: Logger;
  file: string;
}

class FileKeySet implements KeySet {
  #state: State;
  readonly #context: FileKeySetContext;
  #listener: ((current: Stats, previous: Stats) => void) | undefined;
  #reloading = false;
  #reloadAgain = false;

  constructor(state: State, context: FileKeySetContext) {
    this.#state = state;
    this.#context = context;
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

  algorithms(): SigningAlgorithm[] {
    return this.#current().algorithms;
  }

  close(): void {
    if (this.#listener !== undefined) unwatchFile(this.#context.file, this.#listener);
    this.#listener = undefined;
  }

  watch(): void {
    const { file, logger } = this.#context;
    this.#listener = (current, previous) => {
      // A rename (how the file is always written) changes the inode even when
      // mtime and size happen to match.
      if (current.mtimeMs === previous.mtimeMs && current.ino === previous.ino && current.size === previous.size) return;
      if (current.nlink === 0) {
        logger.error({ file }, 'keys file disappeared; the keys in memory stay in use');
        return;
      }
      void this.#reload();
    };
    watchFile(file, { interval: WATCH_INTERVAL_MS, persistent: false }, this.#listener);
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
    // One reload at a time; a change seen meanwhile reads the file once more.
    if (this.#reloading) {
      this.#reloadAgain = true;
      return;
    }
    this.#reloading = true;
    const { file, logger, now, retainMs, algorithm } = this.#context;
    try {
      do {
        this.#reloadAgain = false;
        try {
          const stored = await readKeysFile(file);
          if (stored === null) throw new KeysFileError(file, 'missing');
          const keys = unexpired(await importKeys(file, stored.keys, this.#state.keys), now(), retainMs);
          if (newestUnretired(keys) === undefined) throw new KeysFileError(file, 'no key may sign');
          if (this.#listener === undefined) return; // closed while reading
          const before = this.#state.signing.kid;
          this.#state = buildState(keys, retainMs);
          const { kid, alg } = this.#state.signing;
          logger.info({ file, kid, alg, previousKid: before, keys: keys.length }, 'reloaded the signing keys');
          if (alg !== algorithm) {
            logger.warn({ file, kid, alg, configured: algorithm }, 'the keys file signs with another algorithm than configured');
          }
        } catch (error) {
          // KeysFileError messages name the file and the problem, never key material.
          logger.error({ file, err: error }, 'cannot reload the keys file; the keys in memory stay in use');
        }
      } while (this.#reloadAgain);
    } finally {
      this.#reloading = false;
    }
  }
}

// ---------------------------------------------------------------------------
// Keys: generation, import, retirement.

async function generateStoredKey(alg: SigningAlgorithm, now: number): Promise<StoredKey> {
  const { privateKey } = await generateKeyPair(alg, {
    extractable: true,
    ...(alg === 'RS256' && { modulusLength: RSA_MODULUS_LENGTH }),
  });
  const jwk = await exportJWK(privateKey);
  return { kid: await calculateJwkThumbprint(publicMembers(jwk)), alg, createdAt: new Date(now).toISOString(), jwk };
}

/**
 * Imports each key; a key that does not import or whose kid is not its
 * thumbprint fails the whole file. Keys in `known` (same kid, same alg, same
 * private key) are reused rather than imported again.
 */
async function importKeys(file: string, stored: readonly StoredKey[], known: readonly LoadedKey[] = []): Promise<LoadedKey[]> {
  const seen = new Set<string>();
  return Promise.all(
    stored.map(async (s, index) => {
      const where = `key ${index} (${s.kid})`;
      if (seen.has(s.kid)) throw new KeysFileError(file, `${where}: duplicate kid`);
      seen.add(s.kid);
      if (typeof s.jwk.d !== 'string') throw new KeysFileError(file, `${where}: not a private key`);
      const same = known.find((k) => k.kid === s.kid && k.alg === s.alg && k.stored.jwk.d === s.jwk.d);
      if (same !== undefined) {
        const { retiredAt: _previous, ...reused } = same;
        return { ...reused, ...metadata(s), index, stored: s };
      }
      const publicJwk = publicMembers(s.jwk);
      let thumbprint: string;
      try {
        thumbprint = await calculateJwkThumbprint(publicJwk);
      } catch (cause) {
        throw new KeysFileError(file, `${where}: incomplete public key`, { cause });
      }
      if (thumbprint !== s.kid) throw new KeysFileError(file, `${where}: the kid is not the thumbprint of the key`);
      let privateKey: CryptoKey;
      let publicKey: CryptoKey;
      try {
        // Neither the JWK's own "alg", "use" nor "key_ops" decide anything: the entry's alg does.
        privateKey = (await importJWK(stripParameters(s.jwk), s.alg, { extractable: false })) as CryptoKey;
        publicKey = (await importJWK(publicJwk, s.alg)) as CryptoKey;
      } catch (cause) {
        throw new KeysFileError(file, `${where}: not a usable ${s.alg} key`, { cause });
      }
      return {
        ...metadata(s),
        index,
        privateKey,
        publicKey,
        publicJwk: Object.freeze({ ...publicJwk, kid: s.kid, alg: s.alg, use: 'sig' }),
        stored: s,
      };
    }),
  );
}

/** Only the members RFC 7638 hashes: the public key, nothing private, nothing extra. */
function publicMembers(jwk: JWK): JWK {
  const members = typeof jwk.kty === 'string' && Object.hasOwn(PUBLIC_MEMBERS, jwk.kty) ? PUBLIC_MEMBERS[jwk.kty] : undefined;
  if (members === undefined) throw new TypeError('unsupported key type');
  const result: Record<string, unknown> = {};
  for (const member of members) result[member] = (jwk as Record<string, unknown>)[member];
  return result as JWK;
}

function stripParameters(jwk: JWK): JWK {
  const { alg: _alg, use: _use, key_ops: _keyOps, kid: _kid, ext: _ext, ...rest } = jwk;
  return rest;
}

function metadata(s: StoredKey): { kid: string; alg: SigningAlgorithm; createdAt: number; retiredAt?: number } {
  return {
    kid: s.kid,
    alg: s.alg,
    createdAt: Date.parse(s.createdAt),
    ...(s.retiredAt !== undefined && { retiredAt: Date.parse(s.retiredAt) }),
  };
}

function newestFirst(a: { createdAt: number; index: number }, b: { createdAt: number; index: number }): number {
  return b.createdAt - a.createdAt || b.index - a.index;
}

function newestUnretired<K extends { createdAt: number; retiredAt?: number; index: number }>(keys: readonly K[]): K | undefined {
  return keys.filter((k) => k.retiredAt === undefined).sort(newestFirst)[0];
}

function unexpired<K extends { retiredAt?: number }>(keys: readonly K[], now: number, retainMs: number): K[] {
  return keys.filter((k) => k.retiredAt === undefined || k.retiredAt + retainMs > now);
}

/** `key` signs from now on; every key that could sign until now is retired at `now`. */
function withNewKey(file: KeysFile, key: StoredKey, now: number): KeysFile {
  const retiredAt = new Date(now).toISOString();
  return {
    version: FILE_VERSION,
    keys: [...file.keys.map((k) => (k.retiredAt === undefined ? { ...k, retiredAt } : k)), key],
  };
}

// ---------------------------------------------------------------------------
// The file.

/** The parsed file, or null when there is none. */
async function readKeysFile(file: string): Promise<KeysFile | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new KeysFileError(file, `cannot read it (${(error as NodeJS.ErrnoException).code ?? 'error'})`, { cause: error });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // The SyntaxError quotes the text around the error: key material. Not kept as cause.
    throw new KeysFileError(file, 'not valid JSON');
  }
  return parseKeysFile(file, parsed);
}

function parseKeysFile(file: string, value: unknown): KeysFile {
  if (!isObject(value)) throw new KeysFileError(file, 'not a JSON object');
  if (value.version !== FILE_VERSION) throw new KeysFileError(file, `unsupported version (expected ${FILE_VERSION})`);
  if (!Array.isArray(value.keys)) throw new KeysFileError(file, '"keys" must be an array');
  const keys = value.keys.map((entry: unknown, index: number): StoredKey => {
    const problem = (what: string) => new KeysFileError(file, `key ${index}: ${what}`);
    if (!isObject(entry)) throw problem('not an object');
    const { kid, alg, createdAt, retiredAt, jwk } = entry;
    if (typeof kid !== 'string' || kid === '') throw problem('"kid" must be a non-empty string');
    if (!(SIGNING_ALGORITHMS as readonly unknown[]).includes(alg)) {
      throw problem(`"alg" must be one of ${SIGNING_ALGORITHMS.join(', ')}`);
    }
    if (!isIsoDate(createdAt)) throw problem('"createdAt" must be an ISO 8601 date');
    if (retiredAt !== undefined && !isIsoDate(retiredAt)) throw problem('"retiredAt" must be an ISO 8601 date');
    if (!isObject(jwk) || typeof jwk.kty !== 'string' || !Object.hasOwn(PUBLIC_MEMBERS, jwk.kty)) {
      throw problem('"jwk" must be an OKP, EC or RSA JWK');
    }
    return {
      kid,
      alg: alg as SigningAlgorithm,
      createdAt,
      ...(retiredAt !== undefined && { retiredAt }),
      jwk: jwk as JWK,
    };
  });
  return { version: FILE_VERSION, keys };
}

/**
 * Temp file and rename: a reader (another instance, a watcher) sees the old
 * file or the new one, never half of one. `exclusive` links instead of
 * renaming, so it never replaces a file; it resolves false when one existed.
 */
async function writeKeysFile(file: string, content: KeysFile, options: { exclusive?: boolean } = {}): Promise<boolean> {
  const folder = dirname(file);
  const temp = join(folder, `.${basename(file)}.${process.pid}.${randomUUID()}.tmp`);
  let written = true;
  try {
    await mkdir(folder, { recursive: true, mode: 0o700 });
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(content, null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (options.exclusive) {
      written = await link(temp, file).then(
        () => true,
        (error: NodeJS.ErrnoException) => {
          if (error.code === 'EEXIST') return false;
          throw error;
        },
      );
      await unlink(temp);
    } else {
      await rename(temp, file);
    }
  } catch (error) {
    await unlink(temp).catch(() => {});
    throw new KeysFileError(file, `cannot write it (${(error as NodeJS.ErrnoException).code ?? 'error'})`, { cause: error });
  }
  // The rename is durable only once the folder is: without this a crash can bring back the old keys.
  const handle = await open(folder, 'r').catch(() => undefined);
  await handle?.sync().catch(() => {});
  await handle?.close();
  return written;
}

async function warnIfExposed(file: string, logger: Logger): Promise<void> {
  const { mode } = await stat(file);
  if ((mode & 0o077) !== 0) {
    logger.warn({ file, mode: (mode & 0o777).toString(8) }, 'the keys file holds private keys but other users may read it; chmod 600 it');
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isIsoDate(value: unknown): value is string {
  return typeof value === 'string' && !Number.isNaN(Date.parse(value));
}
