// Users held in Redis: one hash (`users`, named by keyspace.ts) of each
// user's record by user name. A change is one script (redis-scripts.ts:
// compare every record it touches, then write them all and publish on
// `users-changed`), so no reader ever sees half of one, two operators
// changing one user cannot lose either's change silently, and no instance
// misses a change that was made (short of a lost announcement, which the
// identity layer's periodic re-read catches).
import type { Keyspace } from './keyspace.js';
import type { AnnouncementFeed } from './redis-announcements.js';
import type { RedisClient } from './redis-client.js';
import type { StoreScripts } from './redis-scripts.js';
import type { UserRecordChange, UserRecords } from './user-records.js';

export class RedisUserRecords implements UserRecords {
  readonly #redis: RedisClient;
  readonly #keys: Keyspace;
  readonly #scripts: StoreScripts;
  readonly #feed: AnnouncementFeed;

  /** Commands go over `redis`, which its owner (the store) closes; announcements over its feed. */
  constructor(redis: RedisClient, keys: Keyspace, scripts: StoreScripts, feed: AnnouncementFeed) {
    this.#redis = redis;
    this.#keys = keys;
    this.#scripts = scripts;
    this.#feed = feed;
  }

  async all(): Promise<Map<string, string>> {
    return new Map(Object.entries(await this.#redis.hgetall(this.#keys.users)));
  }

  async change(changes: readonly UserRecordChange[]): Promise<boolean> {
    if (changes.length === 0) return true;
    // The names only: an announcement is heard by anyone subscribed, and says nothing a record holds.
    const message = JSON.stringify(changes.map((change) => change.username));
    return this.#scripts.changeUsers(this.#keys.users, changes, { channel: this.#feed.usersChangedChannel, message });
  }

  onUsersChanged(listener: () => void): () => void {
    return this.#feed.usersChanged.add(listener);
  }
}
