// Password hashing with scrypt (RFC 7914) from node:crypto. Every call is the
// asynchronous one: scrypt runs on the libuv thread pool, so a login burst
// slows other logins down but never blocks the event loop that proxies traffic.
//
// The encoding names its own parameters, `scrypt$ln=15,r=8,p=1$<salt>$<hash>`,
// so the defaults can be raised later without invalidating stored hashes.
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { decode, encode, KEY_BYTES, paramsAreAcceptable, SALT_BYTES, scryptMemoryBytes, type ScryptParams } from '../core/password-hash-format.js';

export type { ScryptParams } from '../core/password-hash-format.js';

/**
 * N = 2^15, r = 8 takes 128 · N · r = 32 MiB and some tens of milliseconds per
 * hash: a compromise between OWASP's recommended 2^17 (128 MiB, which would
 * cap a small instance at a handful of concurrent logins) and login throughput.
 */
export const DEFAULT_SCRYPT_PARAMS: Readonly<ScryptParams> = Object.freeze({ logN: 15, r: 8, p: 1 });

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
