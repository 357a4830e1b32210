// Password hashing with scrypt (RFC 7914) from node:crypto. Every call is the
// asynchronous one: scrypt runs on the libuv thread pool, so a login burst
// slows other logins down but never blocks the event loop that proxies traffic.
//
// The encoding names its own parameters, `scrypt$ln=15,r=8,p=1$<salt>$<hash>`,
// so the defaults can be raised later without invalidating stored hashes.
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

export interface ScryptParams {
  /** log2 of the CPU/memory cost N. */
  logN: number;
  /** Block size. */
  r: number;
  /** Parallelisation. */
  p: number;
}

/**
 * N = 2^15, r = 8 takes 128 · N · r = 32 MiB and some tens of milliseconds per
 * hash: a compromise between OWASP's recommended 2^17 (128 MiB, which would
 * cap a small instance at a handful of concurrent logins) and login throughput.
 */
export const DEFAULT_SCRYPT_PARAMS: Readonly<ScryptParams> = Object.freeze({ logN: 15, r: 8, p: 1 });

const SALT_BYTES = 16;
const KEY_BYTES = 32;

// Bounds for parameters read back from an encoding: a corrupt or hostile users
// file must not make one login allocate gigabytes.
const MAX_LOG_N = 20;
const MAX_R = 32;
const MAX_P = 16;
const MAX_MEMORY_BYTES = 256 * 1024 * 1024;

const ENCODING = /^scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/;

interface DecodedHash {
  params: ScryptParams;
  salt: Buffer;
  hash: Buffer;
}

/** Hashes a password (compared later as the exact UTF-8 string given: no normalisation). */
export async function hashPassword(password: string, params: ScryptParams = DEFAULT_SCRYPT_PARAMS): Promise<string> {
  if (!paramsAreAcceptable(params)) {
    throw new RangeError(`unsupported scrypt parameters ln=${params.logN},r=${params.r},p=${params.p}`);
  }
  const salt = randomBytes(SALT_BYTES);
  const hash = await deriveKey(password, salt, KEY_BYTES, params);
  return encode({ params, salt, hash });
}

/**
 * True when `password` hashes to `encoded`. A malformed encoding is a mismatch,
 * never an exception: the caller treats it like a wrong password.
 */
export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  const decoded = decode(encoded);
  if (!decoded) return false;
  let candidate: Buffer;
  try {
    candidate = await deriveKey(password, decoded.salt, decoded.hash.length, decoded.params);
  } catch {
    return false;
  }
  return timingSafeEqual(candidate, decoded.hash);
}

/** True when `encoded` is a hash this module can verify (used to validate the users file). */
export function isWellFormedPasswordHash(encoded: string): boolean {
  return decode(encoded) !== null;
}

function encode({ params, salt, hash }: DecodedHash): string {
  return `scrypt$ln=${params.logN},r=${params.r},p=${params.p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

function decode(encoded: string): DecodedHash | null {
  if (typeof encoded !== 'string') return null;
  const match = ENCODING.exec(encoded);
  if (!match) return null;
  const [, logN, r, p, saltText, hashText] = match;
  const params: ScryptParams = { logN: Number(logN), r: Number(r), p: Number(p) };
  if (!paramsAreAcceptable(params)) return null;
  const salt = decodeBase64Url(saltText!);
  const hash = decodeBase64Url(hashText!);
  if (!salt || !hash || salt.length < SALT_BYTES || hash.length < 16 || hash.length > 64) return null;
  return { params, salt, hash };
}

/** Buffer.from ignores stray characters and padding bits; accept only the canonical form. */
function decodeBase64Url(text: string): Buffer | null {
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : null;
}

function paramsAreAcceptable({ logN, r, p }: ScryptParams): boolean {
  return (
    Number.isInteger(logN) && logN >= 1 && logN <= MAX_LOG_N &&
    Number.isInteger(r) && r >= 1 && r <= MAX_R &&
    Number.isInteger(p) && p >= 1 && p <= MAX_P &&
    scryptMemoryBytes({ logN, r, p }) <= MAX_MEMORY_BYTES
  );
}

/** What OpenSSL reserves: the V array of N + 2 blocks plus p blocks of B (128 · r bytes each). */
function scryptMemoryBytes({ logN, r, p }: ScryptParams): number {
  return 128 * r * (2 ** logN + 2 + p);
}

function deriveKey(password: string, salt: Buffer, keyLength: number, params: ScryptParams): Promise<Buffer> {
  const options: ScryptOptions = {
    N: 2 ** params.logN,
    r: params.r,
    p: params.p,
    // Node's default limit (32 MiB) is exactly the default cost and leaves no
    // headroom; set it from the parameters, plus slack for OpenSSL's bookkeeping.
    maxmem: scryptMemoryBytes(params) + 1024 * 1024,
  };
  return new Promise((resolve, reject) => {
    // A string password is hashed as its UTF-8 bytes.
    scrypt(password, salt, keyLength, options, (error, key) => {
      if (error) reject(error);
      else resolve(key);
    });
  });
}
