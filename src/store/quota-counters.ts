// Where quota counters live (limits/quotas/ says what they count): in Redis
// when the store is Redis (redis-quota-counters.ts: one atomic script per
// count, so every instance counts together), in this process otherwise
// (below: each instance counts alone, which the gateway says at start).
//
// Two kinds of count. A rate is a GCRA (generic cell rate algorithm): its
// value is the theoretical arrival time of the next request (epoch ms); a
// request is taken while that time, advanced by one interval, stays within the
// tolerance of now. A calendar quota is a plain count of one window, whose key
// names the window, so that a new window starts at zero.
import { Keyspace } from './keyspace.js';

export type QuotaCounting =
  /** `intervalMs`: the window over the limit; `toleranceMs`: the burst times the interval. */
  | { readonly kind: 'rate'; readonly intervalMs: number; readonly toleranceMs: number }
  /** `limit` requests until `endsAtMs`, when the window (and its key) ends. */
  | { readonly kind: 'calendar'; readonly limit: number; readonly endsAtMs: number };

export interface QuotaCount {
  readonly taken: boolean;
  /** After the call: a rate's theoretical arrival time (epoch ms), a calendar quota's requests counted. */
  readonly value: number;
}

export interface QuotaCounters {
  /** True when every instance sharing the store counts together. */
  readonly shared: boolean;
  /** Counts one request when the limit allows it. Rejects with `store_unavailable` when the store cannot answer. */
  take(consumer: string, counter: string, counting: QuotaCounting, nowMs: number): Promise<QuotaCount>;
  /** Takes back one request counted by `take` (another limit of the same request refused it). */
  giveBack(consumer: string, counter: string, counting: QuotaCounting): Promise<void>;
  /** The value now, without counting: what the account page and `gatehouse usage` show. */
  read(consumer: string, counter: string, counting: QuotaCounting, nowMs: number): Promise<number>;
}

/** The memory counters' bound: past it the oldest counter is dropped (the consumer it counted starts again). */
export const MAX_MEMORY_QUOTA_COUNTERS = 100_000;

/** The next value of a GCRA or a calendar count, or null when the request is refused: the Lua scripts do the same in Redis. */
export function nextQuotaValue(current: number, counting: QuotaCounting, nowMs: number): number | null {
  if (counting.kind === 'calendar') return current + 1 > counting.limit ? null : current + 1;
  const next = Math.max(current, nowMs) + counting.intervalMs;
  return next - nowMs > counting.toleranceMs ? null : next;
}

/** When a counter may be forgotten: a rate once its arrival time has passed, a calendar count when its window ends. */
export function quotaExpiry(value: number, counting: QuotaCounting): number {
  return counting.kind === 'calendar' ? counting.endsAtMs : value;
}

interface MemoryCounter {
  value: number;
  expiresAtMs: number;
}

export class MemoryQuotaCounters implements QuotaCounters {
  readonly shared = false;
  readonly #keys: Keyspace;
  /** Insertion order is age: the first entry is the oldest, dropped when full. */
  readonly #counters = new Map<string, MemoryCounter>();

  constructor(keys: Keyspace) {
    this.#keys = keys;
  }

  take(consumer: string, counter: string, counting: QuotaCounting, nowMs: number): Promise<QuotaCount> {
    const key = this.#keys.quotaCounter(consumer, counter);
    const current = this.#current(key, nowMs);
    const next = nextQuotaValue(current, counting, nowMs);
    if (next === null) return Promise.resolve({ taken: false, value: current });
    this.#counters.delete(key);
    if (this.#counters.size >= MAX_MEMORY_QUOTA_COUNTERS) this.#counters.delete(this.#counters.keys().next().value!);
    this.#counters.set(key, { value: next, expiresAtMs: quotaExpiry(next, counting) });
    return Promise.resolve({ taken: true, value: next });
  }

  giveBack(consumer: string, counter: string, counting: QuotaCounting): Promise<void> {
    const record = this.#counters.get(this.#keys.quotaCounter(consumer, counter));
    if (record !== undefined) record.value -= counting.kind === 'calendar' ? 1 : counting.intervalMs;
    return Promise.resolve();
  }

  read(consumer: string, counter: string, _counting: QuotaCounting, nowMs: number): Promise<number> {
    return Promise.resolve(this.#current(this.#keys.quotaCounter(consumer, counter), nowMs));
  }

  #current(key: string, nowMs: number): number {
    const record = this.#counters.get(key);
    if (record === undefined) return 0;
    if (record.expiresAtMs <= nowMs) {
      this.#counters.delete(key);
      return 0;
    }
    return record.value;
  }
}

/** The counters of this store: shared ones on the Redis store, this process's own otherwise. */
export function quotaCountersOf(store: { readonly quotaCounters?: QuotaCounters | undefined }): QuotaCounters {
  return store.quotaCounters ?? new MemoryQuotaCounters(new Keyspace(''));
}
