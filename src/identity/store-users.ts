// The users held in the store (`identity.usersIn: store`): each user's record
// as JSON under its name (store/user-records.ts keeps them), read whole into
// the provider's snapshot and changed by compare-and-set, so a command run
// from any host reaches every instance at once:
//
// - a change (CLI, account page) writes only the users it touches, each only
//   if it is still as it was read (else read again and retried), and the
//   store announces it on its feed in the same step;
// - every instance reads the users again when it hears an announcement, when
//   its feed resumes after an interruption (announcements may have been
//   missed), and every `rereadMs` in any case, a safety net for a lost one.
//
// A record that does not read (a hand edit in Redis) leaves its user out,
// logged by name: that user cannot log in, everyone else can.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Store } from '../store/store.js';
import type { UserRecords } from '../store/user-records.js';
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
}

export class StoreUsers implements UsersSource {
  readonly kind = 'store' as const;
  readonly #o: Required<StoreUsersOptions>;

  constructor(options: StoreUsersOptions) {
    this.#o = { rereadMs: DEFAULT_USERS_REREAD_MS, ...options };
  }

  async read(): Promise<UsersRead> {
    const texts = await this.#o.records.all();
    return { data: this.#parse(texts).data, digest: usersDigest(texts) };
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

  /**
   * With an empty store, writes the users file's users into it (first start
   * with `usersIn: store`, or the first command run against it); the number
   * written, 0 when the store held users already or the file holds none.
   */
  async seedFrom(file: string): Promise<number> {
    if ((await this.#o.records.all()).size > 0) return 0;
    const { users } = await readUsersFile(file);
    const changes = Object.entries(users).map(([username, record]) => ({ username, expected: null, next: JSON.stringify(record) }));
    // Every user expected absent: an instance seeding at the same moment makes this one write nothing.
    if (changes.length === 0 || !(await this.#o.records.change(changes))) return 0;
    return changes.length;
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

/**
 * The users in `store` for a starting gateway: an empty store is seeded from
 * the users file first (said in a log line: from then on the store is the
 * source, and edits of the file change nothing). A store that does not answer
 * now is said too; the users are read as soon as it does.
 */
export async function openStoreUsers(store: Store, usersFile: string, logger: Logger, rereadMs?: number): Promise<StoreUsers> {
  if (store.users === undefined) throw new Error('identity.usersIn: store needs the Redis store (store.url)');
  const log = logger.child({ component: 'identity', usersIn: 'store' });
  const users = new StoreUsers({
    records: store.users,
    onFeedResumed: (listener) => store.onRevocationFeedResumed(listener),
    logger: log,
    ...(rereadMs !== undefined && { rereadMs }),
  });
  try {
    const seeded = await users.seedFrom(usersFile);
    if (seeded > 0) {
      log.info({ users: seeded, usersFile }, 'the store held no users: seeded it from the users file, which is not read again (the store is the source now)');
    }
  } catch (error) {
    // A seed that does not read fails the start, as the users file does without the store: starting with nobody would hide it.
    if (error instanceof UsersFileError) throw error;
    log.warn({ err: error, usersFile }, 'could not seed the store with the users file now: the store does not answer');
  }
  return users;
}
