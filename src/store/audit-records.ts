// The store's half of the audit trail (audit/ builds and checks the entries): one ordered sequence of entry texts
// for the whole deployment, appended only after the entry the writer read last, so instances never fork it.

/** An entry as kept: its place in the store (a stream id, a line number) and its text. */
export interface StoredAuditEntry {
  id: string;
  text: string;
}

export interface AuditTrailRecords {
  /** The last entry, or null for an empty trail. */
  last(): Promise<StoredAuditEntry | null>;
  /**
   * Appends `text` (whose hash is `hash`) when the last entry's hash is `afterHash` (null: the trail is empty),
   * in one atomic step; false, appending nothing, when another writer came first.
   */
  appendAfter(afterHash: string | null, hash: string, text: string): Promise<boolean>;
  /** Every entry, oldest first. */
  all(): Promise<StoredAuditEntry[]>;
  /** Forgets every entry before the one of `id` (a retention cut). */
  dropBefore(id: string): Promise<void>;
}
