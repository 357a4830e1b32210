// Moves a store's clock forward without waiting. The stores judge expiry by
// the process's Date, which the test fakes (vi.useFakeTimers({ toFake:
// ['Date'] })), and the Redis store also by the time left on each key, which
// Redis counts down by its own clock: here every key under the test's prefix
// loses `ms` of it, and one with no more than that left is gone, as Redis
// would have dropped it by then.
import type { Redis } from 'ioredis';
import { vi } from 'vitest';

export interface RedisKeys {
  /** A connection of the test's own. */
  client: Redis;
  keyPrefix: string;
}

export async function advanceStoreClock(ms: number, redis?: RedisKeys): Promise<void> {
  vi.setSystemTime(Date.now() + ms);
  if (redis === undefined) return;
  for await (const keys of redis.client.scanStream({ match: `${redis.keyPrefix}*` }) as AsyncIterable<string[]>) {
    for (const key of keys) {
      const left = await redis.client.pttl(key);
      // -1: no expiry; -2: gone already.
      if (left < 0) continue;
      if (left <= ms) await redis.client.del(key);
      else await redis.client.pexpire(key, left - ms);
    }
  }
}
