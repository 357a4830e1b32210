// The store's half of users held in Redis (`identity.usersIn: store`; the
// rules for them, the records' format and their checks, are users/'s):
// each user's record as text by user name, changed only by an atomic
// compare-and-set that announces the change to every instance. The store
// keeps each record as the text it is given and does not read it.
//
// Beside the records, a marker says what became of them: `seeded` once they
// were first written, `lost` once an instance found them gone. A store that
// forgot everything (FLUSHALL, an empty replica promoted) has neither, which
// is how the instances that knew it tell a loss from a first start.

/** One user's record going from `expected` to `next`; null: absent (a user added, or removed). */
export interface UserRecordChange {
  username: string;
  expected: string | null;
  next: string | null;
}

export type UsersMarker = 'seeded' | 'lost';

/** The records and the marker, read at one moment. */
export interface UsersState {
  records: Map<string, string>;
  marker: UsersMarker | null;
}

/**
 * What a seed found: `seeded` (it wrote the records), `adopted` (users
 * without a marker, written by a version before markers: marked, kept),
 * `was-seeded` or `was-lost` (a marker: nothing written).
 */
export type SeedOutcome = 'seeded' | 'adopted' | 'was-seeded' | 'was-lost';

export interface UserRecords {
  /** The names of the keys, as alarms name what is missing. */
  readonly keys: { users: string; marker: string };
  /** Every user's record text, by user name. */
  all(): Promise<Map<string, string>>;
  /** The records and the marker, at once. */
  state(): Promise<UsersState>;
  /**
   * Applies every change at once if each user's record is still as
   * `expected`, and announces it to every instance (this one included);
   * resolves false, changing nothing, when one of them changed meanwhile.
   */
  change(changes: readonly UserRecordChange[]): Promise<boolean>;
  /** Writes `records` into a store with no marker and no users and marks it seeded, at once (see SeedOutcome). */
  seed(records: ReadonlyMap<string, string>): Promise<SeedOutcome>;
  /** Marks a store without a marker `lost` (its data was lost: no start may seed it again); false when it has a marker. */
  markLost(): Promise<boolean>;
  /** Marks the store `seeded` whatever it said (the users were put back on purpose), announced to every instance. */
  markSeeded(): Promise<void>;
  /** Called when any instance or command changed the users; returns a function that removes the listener. */
  onUsersChanged(listener: () => void): () => void;
}
