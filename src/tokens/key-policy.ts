// Which keys sign and which are kept. The newest unretired key signs; a
// retired key keeps verifying for the retention (the refresh-token lifetime),
// because tokens it signed before its retirement may be valid that long, and
// is dropped after that: it can no longer have signed anything still valid.
// Pure functions of the keys and the time: nothing here reads or writes.
import type { SigningAlgorithm } from '../config/schema.js';
import { KEYS_FILE_VERSION, type KeysFile, type StoredKey } from './keys-file.js';

/** A key's times as epoch milliseconds, and its place in the file. */
export interface KeyTimes {
  readonly createdAt: number;
  readonly retiredAt?: number;
  /** The position in the file: breaks ties between keys created in the same millisecond. */
  readonly index: number;
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

export function keyTimes(s: StoredKey): { kid: string; alg: SigningAlgorithm; createdAt: number; retiredAt?: number } {
  return {
    kid: s.kid,
    alg: s.alg,
    createdAt: Date.parse(s.createdAt),
    ...(s.retiredAt !== undefined && { retiredAt: Date.parse(s.retiredAt) }),
  };
}

export function newestFirst(a: KeyTimes, b: KeyTimes): number {
  return b.createdAt - a.createdAt || b.index - a.index;
}

/** The key that signs: the newest one not retired. */
export function newestUnretired<K extends KeyTimes>(keys: readonly K[]): K | undefined {
  return keys.filter((k) => k.retiredAt === undefined).sort(newestFirst)[0];
}

/** The keys that may still have signed a valid token. */
export function unexpired<K extends { retiredAt?: number }>(keys: readonly K[], now: number, retainMs: number): K[] {
  return keys.filter((k) => k.retiredAt === undefined || k.retiredAt + retainMs > now);
}

/** `key` signs from now on; every key that could sign until now is retired at `now`. */
export function withNewKey(keys: readonly StoredKey[], key: StoredKey, now: number): KeysFile {
  const retiredAt = new Date(now).toISOString();
  return {
    version: KEYS_FILE_VERSION,
    keys: [...keys.map((k) => (k.retiredAt === undefined ? { ...k, retiredAt } : k)), key],
  };
}

/** The stored keys described, newest first. */
export function describeKeys(stored: readonly StoredKey[], now: number, retainMs: number): KeyInfo[] {
  const timed = stored.map((s, index) => ({ ...keyTimes(s), index, s }));
  const signing = newestUnretired(timed);
  return [...timed].sort(newestFirst).map((k) => ({
    kid: k.kid,
    alg: k.alg,
    createdAt: k.s.createdAt,
    ...(k.s.retiredAt !== undefined && { retiredAt: k.s.retiredAt }),
    status: k === signing ? 'signing' : unexpired([k], now, retainMs).length === 0 ? 'expired' : 'retired',
  }));
}
