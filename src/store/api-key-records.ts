// The store's half of the keys users make for themselves (the account's
// rules for them are account/store-api-keys.ts's): where each key is kept,
// the listing of each user's keys, and when each was last used. The store
// keeps a key's record as the text it is given and does not read it.

/** A key as the store holds it: whose it is, and its record (the account's JSON). */
export interface StoredApiKey {
  sub: string;
  record: string;
}

export interface ApiKeyRecords {
  /** The key of that id, or null (none, forgotten, or missing its owner or record). */
  find(keyId: string): Promise<StoredApiKey | null>;
  /** The ids listed for the user; some may name keys the store has forgotten since. */
  listedIds(sub: string): Promise<string[]>;
  /** Takes ids out of the user's listing. */
  unlist(sub: string, keyIds: readonly string[]): Promise<void>;
  /** Lists the key for its owner, then keeps it; forgotten at `forgetAtMs` (epoch ms) when one is given. */
  add(owner: { sub: string; username: string }, keyId: string, record: string, forgetAtMs?: number): Promise<void>;
  /** Deletes the key, then takes it out of its owner's listing. */
  remove(sub: string, keyId: string): Promise<void>;
  /** Notes that the key was used at `atMs`, remembered for `ttlMs`. */
  noteUse(keyId: string, atMs: number, ttlMs: number): Promise<void>;
  /** When each of these keys was last used, for those it is known of. */
  lastUses(keyIds: readonly string[]): Promise<Map<string, number>>;
}
