// Recovery codes: ten single-use codes shown once when TOTP is confirmed, for
// the day the phone is lost. Only their SHA-256 digests are kept (each holds about
// 50 random bits, so a digest needs no salt or slow hash to resist guessing
// through the throttled login); a code is read case- and space-insensitively.
import { randomInt } from 'node:crypto';
import { hashApiKeySecret } from '../users/api-keys.js';

const ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
const COUNT = 10;
const GROUP = 5;
const CODE = new RegExp(`^[${ALPHABET}]{${GROUP}}-[${ALPHABET}]{${GROUP}}$`);

/** Ten fresh codes, `xxxxx-xxxxx`. */
export function newRecoveryCodes(): string[] {
  const group = () => Array.from({ length: GROUP }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');
  return Array.from({ length: COUNT }, () => `${group()}-${group()}`);
}

/** The code as typed, normalised; null when it cannot be a recovery code. */
export function readRecoveryCode(typed: string): string | null {
  const code = typed.trim().toLowerCase().replace(/\s+/g, '');
  return CODE.test(code) ? code : null;
}

export function recoveryCodeDigest(code: string): string {
  return hashApiKeySecret(code);
}
