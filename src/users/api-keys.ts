// API keys: `ghk_<keyId>_<secret>`, given in the password field of a login.
//
// The key id (8 random bytes as 16 lowercase hex characters) is not secret: it
// finds the stored key in O(1) and names the key in logs, listings and
// sessions. The secret (32 random bytes, base64url) is stored only as its
// SHA-256 digest. A fast hash is enough here, unlike for passwords: with 256
// bits of entropy there is nothing to guess, so a stolen users file cannot be
// brute-forced however many digests per second an attacker computes, and login
// with a key stays cheap.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const API_KEY_PREFIX = 'ghk_';

const KEY_ID_BYTES = 8;
const SECRET_BYTES = 32;
const KEY_ID_CHARS = KEY_ID_BYTES * 2;
const SECRET_CHARS = Math.ceil((SECRET_BYTES * 4) / 3); // unpadded base64url: 43
const API_KEY_LENGTH = API_KEY_PREFIX.length + KEY_ID_CHARS + 1 + SECRET_CHARS;
const DIGEST_BYTES = 32;

// The secret may itself hold `_` and `-`; the fixed-width key id keeps the split unambiguous.
const API_KEY = new RegExp(`^${API_KEY_PREFIX}([0-9a-f]{${KEY_ID_CHARS}})_([A-Za-z0-9_-]{${SECRET_CHARS}})$`);

export const KEY_ID_PATTERN = new RegExp(`^[0-9a-f]{${KEY_ID_CHARS}}$`);

export interface GeneratedApiKey {
  /** The whole key, shown to its owner once and never stored. */
  key: string;
  keyId: string;
  /** base64url SHA-256 of the secret: what the users file keeps. */
  hash: string;
}

export interface ParsedApiKey {
  keyId: string;
  secret: string;
}

export function generateApiKey(): GeneratedApiKey {
  const keyId = randomBytes(KEY_ID_BYTES).toString('hex');
  const secret = randomBytes(SECRET_BYTES).toString('base64url');
  return { key: `${API_KEY_PREFIX}${keyId}_${secret}`, keyId, hash: hashApiKeySecret(secret) };
}

/** Splits a string that has the exact shape of an API key; null for anything else (e.g. a password). */
export function parseApiKey(candidate: string): ParsedApiKey | null {
  if (typeof candidate !== 'string' || candidate.length !== API_KEY_LENGTH) return null;
  const match = API_KEY.exec(candidate);
  if (!match) return null;
  return { keyId: match[1]!, secret: match[2]! };
}

/**
 * The digest of the secret's text as given. Hashing the text rather than the
 * decoded bytes means only the one spelling that was issued matches, even
 * though base64url decoders tolerate variants of the last character.
 */
export function hashApiKeySecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('base64url');
}

/** Compares digests, not secrets, in constant time; a malformed stored hash never matches. */
export function apiKeySecretMatches(secret: string, storedHash: string): boolean {
  const expected = Buffer.from(storedHash, 'base64url');
  if (expected.length !== DIGEST_BYTES) return false;
  const actual = createHash('sha256').update(secret, 'utf8').digest();
  return timingSafeEqual(actual, expected);
}
