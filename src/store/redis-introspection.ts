// Introspection answers in Redis: one string per token digest
// (`introspection:<digest>`, named by keyspace.ts) that Redis forgets when
// the answer may no longer be trusted.
import type { IntrospectionAnswers } from './introspection-answers.js';
import type { Keyspace } from './keyspace.js';
import type { RedisClient } from './redis-client.js';

export class RedisIntrospectionAnswers implements IntrospectionAnswers {
  readonly #redis: RedisClient;
  readonly #keys: Keyspace;

  /** Commands go over `redis`, which its owner (the store) closes. */
  constructor(redis: RedisClient, keys: Keyspace) {
    this.#redis = redis;
    this.#keys = keys;
  }

  get(tokenDigest: string): Promise<string | null> {
    return this.#redis.get(this.#keys.introspection(tokenDigest));
  }

  async set(tokenDigest: string, answer: string, ttlMs: number): Promise<void> {
    await this.#redis.set(this.#keys.introspection(tokenDigest), answer, 'PX', Math.ceil(ttlMs));
  }
}
