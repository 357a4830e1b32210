// Users' own API keys in Redis: one hash per key under its own hash tag
// (`apikey:{id}`: its owner's sub and username, and its record), a set of
// each user's key ids (`user-apikeys:{sub}`) and each key's last use
// (`apikey-used:{id}`), named by keyspace.ts. A login reads the key's hash,
// so a key made on one instance works on every other at once, and a key
// deleted stops every login with it at once. A key given an end is
// forgotten by Redis itself then.
import type { ApiKeyRecords, StoredApiKey } from './api-key-records.js';
import type { Keyspace } from './keyspace.js';
import type { RedisClient } from './redis-client.js';

export class RedisApiKeys implements ApiKeyRecords {
  readonly #redis: RedisClient;
  readonly #keys: Keyspace;

  /** Commands go over `redis`, which its owner (the store) closes. */
  constructor(redis: RedisClient, keys: Keyspace) {
    this.#redis = redis;
    this.#keys = keys;
  }

  async find(keyId: string): Promise<StoredApiKey | null> {
    const [sub, record] = await this.#redis.hmget(this.#keys.apiKey(keyId), 'sub', 'record');
    return sub && record ? { sub, record } : null;
  }

  listedIds(sub: string): Promise<string[]> {
    return this.#redis.smembers(this.#keys.userApiKeys(sub));
  }

  async unlist(sub: string, keyIds: readonly string[]): Promise<void> {
    // SREM needs at least one member.
    if (keyIds.length > 0) await this.#redis.srem(this.#keys.userApiKeys(sub), ...keyIds);
  }

  async add(owner: { sub: string; username: string }, keyId: string, record: string, forgetAtMs?: number): Promise<void> {
    const key = this.#keys.apiKey(keyId);
    // Listed, then kept: a listed id whose key is missing is dropped at the next listing, while a key kept but not listed would escape its owner's limit.
    await this.#redis.sadd(this.#keys.userApiKeys(owner.sub), keyId);
    await this.#redis.hset(key, 'sub', owner.sub, 'username', owner.username, 'record', record);
    if (forgetAtMs !== undefined) await this.#redis.pexpireat(key, forgetAtMs);
  }

  async remove(sub: string, keyId: string): Promise<void> {
    await this.#redis.del(this.#keys.apiKey(keyId));
    await this.#redis.srem(this.#keys.userApiKeys(sub), keyId);
  }

  async noteUse(keyId: string, atMs: number, ttlMs: number): Promise<void> {
    await this.#redis.set(this.#keys.apiKeyLastUse(keyId), String(atMs), 'PX', ttlMs);
  }

  async lastUses(keyIds: readonly string[]): Promise<Map<string, number>> {
    const used = new Map<string, number>();
    const answers = await Promise.all(keyIds.map((id) => this.#redis.get(this.#keys.apiKeyLastUse(id))));
    keyIds.forEach((id, index) => {
      const value = Number(answers[index]);
      if (answers[index] !== null && Number.isFinite(value)) used.set(id, value);
    });
    return used;
  }
}
