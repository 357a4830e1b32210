// The users held in the store (`identity.usersIn: store`): each user's record
// as JSON under its name (store/user-records.ts), read whole into the
// provider's snapshot and changed by compare-and-set, announced to every
// instance, which reads them again then, when its feed resumes, and every
// `rereadMs`. A record that does not read leaves its user out, logged by name.
//
// Redis is then the user database, and its marker says what became of it: a
// store without one is seeded once (from the users file, if it exists) by the
// first instance that reads it; an instance that knew it seeded and finds the
// marker gone marks it `lost` and raises the alarm; no later start seeds it
// again: only `gatehouse users import` puts the users back and ends it.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { StoreFeed, UsersStore } from '../store/store.js';
import type { SeedOutcome, UserRecords, UsersState } from '../store/user-records.js';
import { readUsersFile, UsersFileError, validateUsersData, type UserRecord, type UsersFileData } from './users-file.js';
import type { UsersChange, UsersRead, UsersSource } from './users-source.js';

/** How often every instance reads the users again whatever it heard, when not told (config: identity.usersRereadS). */
const DEFAULT_USERS_REREAD_MS = 15_000;
/** Changes that lose this many races in a row give up (someone is changing the same users in a loop). */
const MAX_CHANGE_ATTEMPTS = 8;
const SOURCE = 'the store';

export interface StoreUsersOptions {
  records: UserRecords;
  /** The store's feed resumed after an interruption (Store.onRevocationFeedResumed). */
  onFeedResumed: (listener: () => void) => () => void;
  logger: Logger;
  rereadMs?: number;
  /**
   * A gateway's: the users file that seeds a store never seeded (`identity.usersFile`; it need not exist).
   * Absent (a command): this reader neither seeds nor marks a store, it only reads what is there.
   */
  seedFile?: string;
  /** Told when the users are found lost, and when they are back (undefined): the metric and readiness. */
  onLossChange?: (loss: UsersLoss | undefined) => void;
}

/** The users held in the store are gone: the keys missing, as the alarm names them. */
export interface UsersLoss {
  missing: string[];
}

/** What this instance's seed found (store/user-records.ts), and how many users it wrote. */
export interface SeedReport {
  outcome: SeedOutcome;
  users: number;
}

export class StoreUsers implements UsersSource {
  readonly kind = 'store' as const;
  readonly #o: StoreUsersOptions & { rereadMs: number };
  /** This instance saw the store marked seeded: a marker gone since is a loss, not a first start. */
  #knewSeeded = false;
  #loss: UsersLoss | undefined;
  #seed: SeedReport | undefined;

  constructor(options: StoreUsersOptions) {
    this.#o = { rereadMs: DEFAULT_USERS_REREAD_MS, ...options };
  }

  async read(): Promise<UsersRead> {
    const state = await this.#settle(await this.#o.records.state());
    this.#note(state);
    return { data: this.#parse(state.records).data, digest: usersDigest(state.records) };
  }

  /** The users are gone (the alarm), as of the last read; undefined while they are not. */
  get loss(): UsersLoss | undefined {
    return this.#loss;
  }

  /** What the seed this instance ran found; undefined when the store was marked before it first read it. */
  get seedReport(): SeedReport | undefined {
    return this.#seed;
  }

  /**
   * A store without a marker: one this instance knew seeded has lost its data
   * (marked `lost`, so no later start seeds it); any other is new (seeded from
   * the file when it holds no users, adopted when an older version wrote them).
   */
  async #settle(state: UsersState): Promise<UsersState> {
    if (state.marker !== null || this.#o.seedFile === undefined) return state;
    if (this.#knewSeeded) {
      await this.#o.records.markLost();
    } else {
      const records = state.records.size === 0 ? await seedRecords(this.#o.seedFile) : new Map<string, string>();
      const outcome = await this.#o.records.seed(records);
      this.#seed = { outcome, users: outcome === 'seeded' ? records.size : 0 };
    }
    return this.#o.records.state();
  }

  /** Raises the alarm when the store says its users were lost, and lowers it once they are back. */
  #note(state: UsersState): void {
    if (state.marker === 'seeded') this.#knewSeeded = true;
    const { users, marker } = this.#o.records.keys;
    const loss = state.marker === 'lost' ? { missing: [...(state.records.size === 0 ? [users] : []), marker] } : undefined;
    if (loss && !this.#loss) {
      this.#o.logger.error(
        { missing: loss.missing },
        'the users held in the store are gone (Redis lost its data: a FLUSHALL, a failover to an empty replica, a Redis replaced without ' +
          `its data): ${loss.missing.join(' and ')} missing. Nobody can log in, and the users file is not read again: ` +
          'restore the users with `gatehouse users import <an export>`',
      );
    } else if (!loss && this.#loss) {
      this.#o.logger.info({ users: state.records.size }, 'the users held in the store are back (the store is marked seeded again): the alarm is over');
    }
    if (Boolean(loss) !== Boolean(this.#loss)) this.#o.onLossChange?.(loss);
    this.#loss = loss;
  }

  async change(change: UsersChange): Promise<UsersFileData> {
    for (let attempt = 1; ; attempt += 1) {
      const texts = await this.#o.records.all();
      const { data } = this.#parse(texts);
      const next = validateUsersData(change(data), SOURCE);
      const names = new Set([...Object.keys(data.users), ...Object.keys(next.users)]);
      const changes = [...names].flatMap((username) => {
        const before = Object.hasOwn(data.users, username) ? JSON.stringify(data.users[username]) : null;
        const after = Object.hasOwn(next.users, username) ? JSON.stringify(next.users[username]) : null;
        return before === after ? [] : [{ username, expected: texts.get(username) ?? null, next: after }];
      });
      if (await this.#o.records.change(changes)) return next;
      if (attempt >= MAX_CHANGE_ATTEMPTS) throw new Error(`the users changed under this change ${attempt} times in a row; try again`);
    }
  }

  watch(onChange: () => Promise<unknown>): () => Promise<void> {
    const heard = () => void onChange();
    const stops = [this.#o.records.onUsersChanged(heard), this.#o.onFeedResumed(heard)];
    const timer = setInterval(heard, this.#o.rereadMs).unref();
    return async () => {
      clearInterval(timer);
      for (const stop of stops) stop();
    };
  }

  /** Replaces every user in the store by the given ones (`users import`); what was added, changed and removed. */
  async replaceAll(data: UsersFileData): Promise<{ added: number; changed: number; removed: number }> {
    const counts = { added: 0, changed: 0, removed: 0 };
    await this.change((current) => {
      counts.added = Object.keys(data.users).filter((name) => !Object.hasOwn(current.users, name)).length;
      counts.removed = Object.keys(current.users).filter((name) => !Object.hasOwn(data.users, name)).length;
      counts.changed = Object.keys(data.users).filter(
        (name) => Object.hasOwn(current.users, name) && JSON.stringify(current.users[name]) !== JSON.stringify(data.users[name]),
      ).length;
      return data;
    });
    // The explicit way back from a loss: the store is marked seeded again, and every instance told.
    await this.#o.records.markSeeded();
    return counts;
  }

  /** Every readable record, each checked alone, then all together (ids unique across users); the names of those left out. */
  #parse(texts: ReadonlyMap<string, string>): { data: UsersFileData; unreadable: string[] } {
    const users: Record<string, UserRecord> = {};
    const unreadable: string[] = [];
    for (const [username, text] of texts) {
      try {
        users[username] = validateUsersData({ users: { [username]: JSON.parse(text) as unknown } }, SOURCE).users[username]!;
      } catch (error) {
        unreadable.push(username);
        // The problems name fields, never their values: a record holds a password hash.
        const problems = error instanceof UsersFileError ? error.problems : ['not JSON'];
        this.#o.logger.warn({ username, problems }, 'a user record in the store does not read: that user is left out');
      }
    }
    return { data: validateUsersData({ users }, SOURCE), unreadable };
  }
}

/** SHA-256 over every record, in name order: instances that read the same users tell the same digest. */
export function usersDigest(texts: ReadonlyMap<string, string>): string {
  const hash = createHash('sha256');
  for (const name of [...texts.keys()].sort()) hash.update(JSON.stringify([name, texts.get(name)]));
  return hash.digest('base64url');
}

/** The seed file's users as the store keeps them; a file that does not exist seeds nobody. */
async function seedRecords(file: string): Promise<Map<string, string>> {
  const { users } = await readUsersFile(file);
  return new Map(Object.entries(users).map(([username, record]) => [username, JSON.stringify(record)]));
}

/**
 * The users in `store` for a starting gateway, read once here so that a store
 * never seeded is seeded (from the users file if it exists; said in a log
 * line), a lost one is said, and a seed file that does not read fails the
 * start. A store that does not answer now is said too; the users are read
 * (and a new store seeded) as soon as it does.
 */
export async function openStoreUsers(
  store: UsersStore & StoreFeed,
  options: { usersFile: string; logger: Logger; rereadMs?: number; onLossChange?: (loss: UsersLoss | undefined) => void },
): Promise<StoreUsers> {
  if (store.users === undefined) throw new Error('identity.usersIn: store needs the Redis store (store.url)');
  const { usersFile, rereadMs, onLossChange } = options;
  const log = options.logger.child({ component: 'identity', usersIn: 'store' });
  const users = new StoreUsers({
    records: store.users,
    onFeedResumed: (listener) => store.onRevocationFeedResumed(listener),
    logger: log,
    seedFile: usersFile,
    ...(rereadMs !== undefined && { rereadMs }),
    ...(onLossChange && { onLossChange }),
  });
  try {
    await users.read();
  } catch (error) {
    // A seed that does not read fails the start, as the users file does without the store: starting with nobody would hide it.
    if (error instanceof UsersFileError) throw error;
    log.warn({ err: error, usersFile }, 'cannot read the users from the store now: it does not answer');
  }
  const seed = users.seedReport;
  if (seed?.outcome === 'seeded') {
    const from = seed.users > 0 ? `seeded it with the ${seed.users} users of the users file` : 'no users file to seed it from: it starts with no users';
    log.info({ users: seed.users, usersFile }, `the store was never seeded: ${from}; the file is not read again (the store is the user database now)`);
  } else if (seed?.outcome === 'adopted') {
    log.info('the store holds users but no seed marker (written by an earlier version): marked seeded, the users file not read');
  }
  return users;
}
