// The keys file: one JSON file of private JWKs, each named by the RFC 7638
// thumbprint of its public key. This module reads and writes it and checks
// its shape; what the keys mean (which signs, which are kept) is decided in
// key-policy.ts, and who may write it in key-rotation.ts.
import { readFile, stat } from 'node:fs/promises';
import type { JWK } from 'jose';
import type { Logger } from 'pino';
import { SIGNING_ALGORITHMS, type SigningAlgorithm } from '../config/schema.js';
import { writeFileAtomic } from '../files/atomic-write.js';

export const KEYS_FILE_VERSION = 1;

/** The public members of each key type: what the JWKS may show and what RFC 7638 hashes. */
export const PUBLIC_MEMBERS: Readonly<Record<string, readonly string[]>> = {
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
  version: typeof KEYS_FILE_VERSION;
  keys: StoredKey[];
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

/** The parsed file, or null when there is none. */
export async function readKeysFile(file: string): Promise<KeysFile | null> {
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

/**
 * Replaces the file atomically, readable by its owner only. `exclusive`
 * never replaces a file: it resolves false when one existed.
 */
export async function writeKeysFile(file: string, content: KeysFile, options: { exclusive?: boolean } = {}): Promise<boolean> {
  try {
    return await writeFileAtomic(file, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600, exclusive: options.exclusive ?? false });
  } catch (error) {
    throw new KeysFileError(file, `cannot write it (${(error as NodeJS.ErrnoException).code ?? 'error'})`, { cause: error });
  }
}

export async function warnIfExposed(file: string, logger: Logger): Promise<void> {
  const { mode } = await stat(file);
  if ((mode & 0o077) !== 0) {
    logger.warn({ file, mode: (mode & 0o777).toString(8) }, 'the keys file holds private keys but other users may read it; chmod 600 it');
  }
}

function parseKeysFile(file: string, value: unknown): KeysFile {
  if (!isObject(value)) throw new KeysFileError(file, 'not a JSON object');
  if (value.version !== KEYS_FILE_VERSION) throw new KeysFileError(file, `unsupported version (expected ${KEYS_FILE_VERSION})`);
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
  return { version: KEYS_FILE_VERSION, keys };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isIsoDate(value: unknown): value is string {
  return typeof value === 'string' && !Number.isNaN(Date.parse(value));
}
