// The store's half of signing keys shared by several instances (the tokens'
// rules for them are tokens/shared-keyset.ts's): each instance's public keys,
// each instance's view of what it trusts, and the announcement that keys
// changed. The store keeps each entry as the text it is given and does not
// read it: entries are sealed and checked by the tokens layer, because anyone
// who can write to Redis could write here.

export interface SharedKeyRecords {
  /** Keeps `text` as the entry of `kid`, replacing any. */
  putKey(kid: string, text: string): Promise<void>;
  /** The entry of `kid`, or null. */
  findKey(kid: string): Promise<string | null>;
  /** Every key entry, by kid. */
  allKeys(): Promise<Map<string, string>>;
  removeKeys(kids: readonly string[]): Promise<void>;
  /** Keeps `text` as the view of instance `id`, replacing any. */
  putInstance(id: string, text: string): Promise<void>;
  /** Every instance's view, by instance id. */
  allInstances(): Promise<Map<string, string>>;
  removeInstances(ids: readonly string[]): Promise<void>;
  /** Tells every instance sharing the store, this one included, that keys changed. */
  announceKeysChanged(): Promise<void>;
  /** Called when any instance announced that keys changed; returns a function that removes the listener. */
  onKeysChanged(listener: () => void): () => void;
}
