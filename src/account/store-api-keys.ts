// Users' own API keys in Redis: one hash per key under its own hash tag
// (`<prefix>apikey:{id}`, the users file's record as JSON beside its owner),
// and a set of each user's key ids (`<prefix>user-apikeys:{sub}`). A login
// reads the key's hash, so a key made on one instance works on every other at
// once, and a key deleted stops every login with it at once. A key that
// expires is forgotten by Redis itself shortly after.
import type { RedisClient } from '../store/redis-client.js';
import { gatehouseError } from '../core/errors.js';
import type { ApiKeyRecord, NewApiKey } from '../identity/users-file.js';
import type { ApiKeyDirectory, HeldApiKey, KeyOwner } from './api-key-directory.js';

/** An expired key stays listed (as expired) this long before Redis forgets it. */
const KEEP_EXPIRED_MS = 7 * 86_400_000;
/** How long a last use is remembered when the key does not say how long it lives. */
const LAST_USE_TTL_MS = 400 * 86_400_000;

export class StoreApiKeys implements ApiKeyDirectory {
  readonly kind = 'store' as const;
  readonly #redis: RedisClient;
  readonly #prefix: string;

  constructor(redis: RedisClient, keyPrefix: string) {
    this.#redis = redis;
    this.#prefix = keyPrefix;
  }

  /** The key of that id, whoever holds it; null for none (or one that is not readable). */
  async find(keyId: string): Promise<HeldApiKey | null> {
    const [sub, record] = await this.#redis.hmget(this.#keyKey(keyId), 'sub', 'record');
    return sub && record ? held(sub, record) : null;
  }

  async list(owner: KeyOwner): Promise<HeldApiKey[]> {
    const ids = await this.#redis.smembers(this.#userKey(owner.sub));
    const found = await Promise.all(ids.map((id) => this.find(id)));
    // Ids whose key Redis has forgotten (expired) are dropped from the set as they are met.
    const gone = ids.filter((_, index) => found[index] === null);
    if (gone.length > 0) await this.#redis.srem(this.#userKey(owner.sub), ...gone);
    return found.filter((key): key is HeldApiKey => key !== null && key.sub === owner.sub && key.revokedAt === undefined).sort(byCreation);
  }

  async create(owner: KeyOwner, key: NewApiKey, maxPerUser: number): Promise<HeldApiKey> {
    // Counted from the listing, which drops forgotten ids: two creates racing may both pass, by one key at most each.
    if ((await this.list(owner)).length >= maxPerUser) throw gatehouseError('api_key_limit', { reason: `a user may hold at most ${maxPerUser} API keys` });
    const record: ApiKeyRecord = {
      id: key.keyId,
      hash: key.hash,
      ...(key.label !== undefined && { label: key.label }),
      createdAt: new Date().toISOString(),
      ...(key.scope !== undefined && { scope: key.scope }),
    };
    const keyKey = this.#keyKey(key.keyId);
    await this.#redis.sadd(this.#userKey(owner.sub), key.keyId);
    await this.#redis.hset(keyKey, 'sub', owner.sub, 'username', owner.username, 'record', JSON.stringify(record));
    const expiresAt = key.scope?.expiresAt;
    if (expiresAt !== undefined) await this.#redis.pexpireat(keyKey, Date.parse(expiresAt) + KEEP_EXPIRED_MS);
    return { ...record, sub: owner.sub };
  }

  async revoke(owner: KeyOwner, keyId: string): Promise<boolean> {
    const key = await this.find(keyId);
    if (key === null || key.sub !== owner.sub) return false;
    await this.#redis.del(this.#keyKey(keyId));
    await this.#redis.srem(this.#userKey(owner.sub), keyId);
    return true;
  }

  recordUse(keyId: string, atMs: number): void {
    this.#redis.set(this.#usedKey(keyId), String(atMs), 'PX', LAST_USE_TTL_MS).catch(() => {});
  }

  async lastUsed(keyIds: readonly string[]): Promise<Map<string, number>> {
    const used = new Map<string, number>();
    const answers = await Promise.all(keyIds.map((id) => this.#redis.get(this.#usedKey(id))));
    keyIds.forEach((id, index) => {
      const value = Number(answers[index]);
      if (answers[index] !== null && Number.isFinite(value)) used.set(id, value);
    });
    return used;
  }

  #keyKey(keyId: string): string {
    return `${this.#prefix}apikey:{${keyId}}`;
  }

  #userKey(sub: string): string {
    return `${this.#prefix}user-apikeys:{${sub}}`;
  }

  #usedKey(keyId: string): string {
    return `${this.#prefix}apikey-used:{${keyId}}`;
  }
}

function held(sub: string, text: string): HeldApiKey | null {
  try {
    const record = JSON.parse(text) as ApiKeyRecord;
    return typeof record.id === 'string' && typeof record.hash === 'string' ? { ...record, sub } : null;
  } catch {
    return null;
  }
}

function byCreation(a: ApiKeyRecord, b: ApiKeyRecord): number {
  return a.createdAt.localeCompare(b.createdAt);
}

