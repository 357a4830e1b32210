// How a scrypt password hash is written down, `scrypt$ln=15,r=8,p=1$<salt>$<hash>`,
// and the bounds a hash read back must stay within: a corrupt or hostile users
// file must not make one login allocate gigabytes. Hashing itself is users/'s
// (users/passwords.ts); the config schema needs only to know a hash when it sees one.

export interface ScryptParams {
  /** log2 of the CPU/memory cost N. */
  logN: number;
  /** Block size. */
  r: number;
  /** Parallelisation. */
  p: number;
}

export const SALT_BYTES = 16;
export const KEY_BYTES = 32;

// Bounds for parameters read back from an encoding: a corrupt or hostile users
// file must not make one login allocate gigabytes.
const MAX_LOG_N = 20;
const MAX_R = 32;
const MAX_P = 16;
const MAX_MEMORY_BYTES = 256 * 1024 * 1024;

const ENCODING = /^scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/;

export interface DecodedHash {
  params: ScryptParams;
  salt: Buffer;
  hash: Buffer;
}

/** True when `encoded` is a hash users/passwords.ts can verify (used to validate the users file). */
export function isWellFormedPasswordHash(encoded: string): boolean {
  return decode(encoded) !== null;
}

export function encode({ params, salt, hash }: DecodedHash): string {
  return `scrypt$ln=${params.logN},r=${params.r},p=${params.p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

export function decode(encoded: string): DecodedHash | null {
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

export function paramsAreAcceptable({ logN, r, p }: ScryptParams): boolean {
  return (
    Number.isInteger(logN) &&
    logN >= 1 &&
    logN <= MAX_LOG_N &&
    Number.isInteger(r) &&
    r >= 1 &&
    r <= MAX_R &&
    Number.isInteger(p) &&
    p >= 1 &&
    p <= MAX_P &&
    scryptMemoryBytes({ logN, r, p }) <= MAX_MEMORY_BYTES
  );
}

/** What OpenSSL reserves: the V array of N + 2 blocks plus p blocks of B (128 · r bytes each). */
export function scryptMemoryBytes({ logN, r, p }: ScryptParams): number {
  return 128 * r * (2 ** logN + 2 + p);
}
