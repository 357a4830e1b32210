// Where the keys users create for themselves are kept. With Redis, in the
// store (store-api-keys.ts): valid on every instance the moment they are
// made, and kept across restarts, while the users file stays the operator's.
// With the in-memory store there is one instance and nothing shared, so they
// go into the users file as the CLI's keys do (file-api-keys.ts).
import type { ApiKeyRecord } from '../users/users-file.js';
import type { NewApiKey } from '../users/users-changes.js';

/** A key as the directory holds it: the users file's record and whose it is. */
export interface HeldApiKey extends ApiKeyRecord {
  sub: string;
}

export interface ApiKeyDirectory {
  /** `store`: Redis, shared; `users file`: the in-memory store's single instance. */
  readonly kind: 'store' | 'users file';
  /** The user's keys, revoked ones left out. */
  list(owner: KeyOwner): Promise<HeldApiKey[]>;
  /** Adds a key; refused (`api_key_limit`) when the user holds `maxPerUser` already. */
  create(owner: KeyOwner, key: NewApiKey, maxPerUser: number): Promise<HeldApiKey>;
  /** Ends the key; false when the user holds no such key. */
  revoke(owner: KeyOwner, keyId: string): Promise<boolean>;
  /** Notes a login with the key (best effort: a failure to note it never fails the login). */
  recordUse(keyId: string, atMs: number): void;
  /** When each of these keys was last used to log in, when known. */
  lastUsed(keyIds: readonly string[]): Promise<Map<string, number>>;
}

export interface KeyOwner {
  sub: string;
  username: string;
}
