// The store's half of users held in Redis (`identity.usersIn: store`; the
// rules for them, the records' format and their checks, are identity/'s):
// each user's record as text by user name, changed only by an atomic
// compare-and-set that announces the change to every instance. The store
// keeps each record as the text it is given and does not read it.

/** One user's record going from `expected` to `next`; null: absent (a user added, or removed). */
export interface UserRecordChange {
  username: string;
  expected: string | null;
  next: string | null;
}

export interface UserRecords {
  /** Every user's record text, by user name. */
  all(): Promise<Map<string, string>>;
  /**
   * Applies every change at once if each user's record is still as
   * `expected`, and announces it to every instance (this one included);
   * resolves false, changing nothing, when one of them changed meanwhile.
   */
  change(changes: readonly UserRecordChange[]): Promise<boolean>;
  /** Called when any instance or command changed the users; returns a function that removes the listener. */
  onUsersChanged(listener: () => void): () => void;
}
