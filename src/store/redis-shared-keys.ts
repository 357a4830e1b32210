// Shared signing keys in Redis: one hash of key entries by kid
// (`signing-keys`) and one of instance views by instance id (`instances`),
// named by keyspace.ts, each a single key (one Cluster slot). "Keys changed"
// travels on the announcement feed (redis-announcements.ts), so it arrives
// in order with revocations. Entries are few (one signing key per instance,
// plus retired ones until their tokens expired) and read whole.
import type { Keyspace } from './keyspace.js';
import type { AnnouncementFeed } from './redis-announcements.js';
import type { RedisClient } from './redis-client.js';
import type { SharedKeyRecords } from './shared-keys.js';

export class RedisSharedKeys implements SharedKeyRecords {
  readonly #redis: RedisClient;
  readonly #keys: Keyspace;
  readonly #feed: AnnouncementFeed;

  /** Commands go over `redis`, which its owner (the store) closes; announcements over its feed. */
  constructor(redis: RedisClient, keys: Keyspace, feed: AnnouncementFeed) {
    this.#redis = redis;
    this.#keys = keys;
    this.#feed = feed;
  }

  async putKey(kid: string, text: string): Promise<void> {
    await this.#redis.hset(this.#keys.signingKeys, kid, text);
  }

  findKey(kid: string): Promise<string | null> {
    return this.#redis.hget(this.#keys.signingKeys, kid);
  }

  async allKeys(): Promise<Map<string, string>> {
    return new Map(Object.entries(await this.#redis.hgetall(this.#keys.signingKeys)));
  }

  async removeKeys(kids: readonly string[]): Promise<void> {
    if (kids.length > 0) await this.#redis.hdel(this.#keys.signingKeys, ...kids);
  }

  async putInstance(id: string, text: string): Promise<void> {
    await this.#redis.hset(this.#keys.instances, id, text);
  }

  async allInstances(): Promise<Map<string, string>> {
    return new Map(Object.entries(await this.#redis.hgetall(this.#keys.instances)));
  }

  async removeInstances(ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.#redis.hdel(this.#keys.instances, ...ids);
  }

  async announceKeysChanged(): Promise<void> {
    // Our own subscriber hears it too: every instance, this one included, reacts the same way.
    await this.#redis.publish(this.#feed.keysChangedChannel, '1');
  }

  onKeysChanged(listener: () => void): () => void {
    return this.#feed.keysChanged.add(listener);
  }
}
