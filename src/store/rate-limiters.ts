// Where rate limiters (limits/) keep their counters, chosen here so that no
// caller holds the store's connection: with the Redis store,
// rate-limiter-flexible's Redis limiter over the store's own command
// connection, so every instance counts together; otherwise its memory
// limiter, counting in this process. Each counter is one key
// (keyspace.ts: `limits:<name>:<key>`), so Redis Cluster needs no hash tags.
import { RateLimiterMemory, RateLimiterRedis, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { Keyspace } from './keyspace.js';
import type { RedisClient } from './redis-client.js';

export interface RateLimiterOptions {
  /** One per kind of counter: part of each counter's key. */
  name: string;
  points: number;
  /** Seconds. */
  duration: number;
  /** Seconds; 0: until the window ends. */
  blockDuration: number;
  /** Remember keys with this many points consumed in this process until their window ends. */
  inMemoryBlockOnConsumed?: number;
}

export interface RateLimiterBackend {
  /** True when every instance sharing the store counts together. */
  readonly shared: boolean;
  create(options: RateLimiterOptions): RateLimiterAbstract;
}

/** The limiters of this store: shared ones on the Redis store, this process's own otherwise. */
export function rateLimitersOf(store: { readonly rateLimiters?: RateLimiterBackend | undefined }): RateLimiterBackend {
  return store.rateLimiters ?? MEMORY_RATE_LIMITERS;
}

/** Limiters on `redis` (the store's own command connection: its owner closes it). */
export function redisRateLimiters(redis: RedisClient, keys: Keyspace): RateLimiterBackend {
  return {
    shared: true,
    create: ({ name, ...options }) => new RateLimiterRedis({ ...options, keyPrefix: keys.limiterPrefix(name), storeClient: redis }),
  };
}

/** Each memory limiter has a map of its own: its prefix only tells counters apart in a debugger. */
const MEMORY_KEYS = new Keyspace('');

const MEMORY_RATE_LIMITERS: RateLimiterBackend = {
  shared: false,
  create: ({ name, ...options }) => new RateLimiterMemory({ ...options, keyPrefix: MEMORY_KEYS.limiterPrefix(name) }),
};
