// How the local provider checks a password: what it is handed by the
// composition root (the hashing queue, the store's API keys, a test's verifier).
import type { ApiKeyRecord } from './users-file.js';

/** Checks a password against its stored hash (scrypt unless a test holds it). */
export type PasswordVerifier = (password: string, encoded: string) => Promise<boolean>;

/**
 * Where password hashing waits for its turn, per client address (limits/'s
 * FairWorkQueue is the one the gateway uses): declared here so users/ asks
 * only for what it needs of a room above it.
 */
export interface HashingQueue {
  run<T>(address: string, work: () => Promise<T>): Promise<T>;
}

export interface PasswordCheckOptions {
  /** Where each login's scrypt waits for its turn; absent, every login hashes at once. */
  hashing?: HashingQueue;
  verifyPassword?: PasswordVerifier;
  /**
   * Keys users made for themselves, kept in the shared store (account/): a
   * key id the users file does not list is looked up there. Their revocation
   * ends their sessions through the store, so such a session's key is taken
   * to be active by `isActive` (its user still must be).
   */
  storeKeys?: { find(keyId: string): Promise<(ApiKeyRecord & { sub: string }) | null> };
  /** Told of every login with an API key (the account page shows when a key was last used). */
  onApiKeyUsed?: (keyId: string) => void;
}
