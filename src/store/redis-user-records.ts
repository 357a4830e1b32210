// Users held in Redis: one hash (`users`, named by keyspace.ts) of each
// user's record by user name, and its marker (`seeded` or `lost`, in the same
// hash slot). A change is one script (redis-scripts.ts: compare every record
// it touches, then write them all and publish on `users-changed`), so no
// reader ever sees half of one, two operators changing one user cannot lose
// either's change silently, and no instance misses a change that was made
// (short of a lost announcement, which the identity layer's periodic re-read
// catches). The marker's scripts read and write it with the records at once,
// so two instances starting together cannot both seed, nor one seed a store
// another has just found lost.
import type { Keyspace } from './keyspace.js';
import type { AnnouncementFeed } from './redis-announcements.js';
import type { RedisClient } from './redis-client.js';
import type { StoreScripts } from './redis-scripts.js';
import type { SeedOutcome, UserRecordChange, UserRecords, UsersMarker, UsersState } from './user-records.js';

/** KEYS: users, marker. ARGV: channel, message, then name and record pairs. */
const SEED = `
local marker = redis.call('GET', KEYS[2])
if marker then return 'was-' .. marker end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('SET', KEYS[2], 'seeded')
  return 'adopted'
end
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('SET', KEYS[2], 'seeded')
if #ARGV > 2 then redis.call('PUBLISH', ARGV[1], ARGV[2]) end
return 'seeded'`;

/** KEYS: marker. ARGV: channel. */
const MARK_SEEDED = `
redis.call('SET', KEYS[1], 'seeded')
redis.call('PUBLISH', ARGV[1], '[]')
return 1`;

const SEED_OUTCOMES: ReadonlySet<unknown> = new Set<SeedOutcome>(['seeded', 'adopted', 'was-seeded', 'was-lost']);

export class RedisUserRecords implements UserRecords {
  readonly keys: { users: string; marker: string };
  readonly #redis: RedisClient;
  readonly #scripts: StoreScripts;
  readonly #feed: AnnouncementFeed;

  /** Commands go over `redis`, which its owner (the store) closes; announcements over its feed. */
  constructor(redis: RedisClient, keys: Keyspace, scripts: StoreScripts, feed: AnnouncementFeed) {
    this.#redis = redis;
    this.keys = { users: keys.users, marker: keys.usersMarker };
    this.#scripts = scripts;
    this.#feed = feed;
  }

  async all(): Promise<Map<string, string>> {
    return new Map(Object.entries(await this.#redis.hgetall(this.keys.users)));
  }

  async state(): Promise<UsersState> {
    const replies = await this.#redis.multi().hgetall(this.keys.users).get(this.keys.marker).exec();
    const [records, marker] = (replies ?? []).map(([error, value]) => {
      if (error) throw error;
      return value;
    });
    return { records: new Map(Object.entries((records ?? {}) as Record<string, string>)), marker: markerOf(marker) };
  }

  async change(changes: readonly UserRecordChange[]): Promise<boolean> {
    if (changes.length === 0) return true;
    return this.#scripts.changeUsers(this.keys.users, changes, { channel: this.#feed.usersChangedChannel, message: namesOf(changes) });
  }

  async seed(records: ReadonlyMap<string, string>): Promise<SeedOutcome> {
    const announcement = [this.#feed.usersChangedChannel, JSON.stringify([...records.keys()])];
    const reply = await this.#redis.eval(SEED, 2, this.keys.users, this.keys.marker, ...announcement, ...[...records].flat());
    if (!SEED_OUTCOMES.has(reply)) throw new Error(`unexpected reply from the users seed script: ${String(reply)}`);
    return reply as SeedOutcome;
  }

  async markLost(): Promise<boolean> {
    // NX: a marker there (another instance's, or a seed's since) stays.
    return (await this.#redis.set(this.keys.marker, 'lost', 'NX')) === 'OK';
  }

  async markSeeded(): Promise<void> {
    await this.#redis.eval(MARK_SEEDED, 1, this.keys.marker, this.#feed.usersChangedChannel);
  }

  onUsersChanged(listener: () => void): () => void {
    return this.#feed.usersChanged.add(listener);
  }
}

/** The names only: an announcement is heard by anyone subscribed, and says nothing a record holds. */
function namesOf(changes: readonly UserRecordChange[]): string {
  return JSON.stringify(changes.map((change) => change.username));
}

/** Anything else (a hand edit) reads as no marker: the records decide, as before markers. */
function markerOf(value: unknown): UsersMarker | null {
  return value === 'seeded' || value === 'lost' ? value : null;
}
