// Rate limiters on the configured store: the store chooses where their
// counters live (store/rate-limiters.ts: in Redis when the store is Redis, so
// every instance counts together, in this process otherwise); this module
// only says what each limiter counts.
import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { gatehouseError, type GatehouseError } from '../core/errors.js';
import { rateLimitersOf, type RateLimiterBackend } from '../store/rate-limiters.js';
import { storeUnavailable } from '../store/store-unavailable.js';
import type { LimitsStore } from '../store/store.js';

export interface LimiterSpec {
  /** Part of every key: one name per kind of counter. */
  name: string;
  points: number;
  durationS: number;
  /** Once `points` are exceeded, refuse for this long (0: until the window ends). */
  blockDurationS?: number;
  /**
   * Remember keys over the limit in this process until their window ends, so
   * a flood is refused without a store round trip per request.
   */
  inMemoryBlock?: boolean;
}

export type Limiter = RateLimiterAbstract;

export class LimiterFactory {
  readonly #backend: RateLimiterBackend;

  constructor(store: LimitsStore) {
    this.#backend = rateLimitersOf(store);
  }

  /** Where the counters live: the CLI's `users unlock` says so. */
  get shared(): boolean {
    return this.#backend.shared;
  }

  create(spec: LimiterSpec): Limiter {
    return this.#backend.create({
      name: spec.name,
      points: spec.points,
      duration: spec.durationS,
      blockDuration: spec.blockDurationS ?? 0,
      ...(spec.inMemoryBlock && { inMemoryBlockOnConsumed: spec.points + 1 }),
    });
  }
}

/** The milliseconds a counter has left, or 0 when it is absent or over (the memory limiter keeps a record until its timer fires). */
export function msLeft(res: RateLimiterRes | null): number {
  return res && res.msBeforeNext > 0 ? res.msBeforeNext : 0;
}

/** A 429 whose Retry-After is `ms` in whole seconds, at least 1. */
export function tooManyRequests(ms: number, reason?: string): GatehouseError {
  return gatehouseError('too_many_requests', {
    headers: { 'retry-after': String(Math.max(1, Math.ceil(ms / 1000))) },
    ...(reason !== undefined && { reason }),
  });
}

/**
 * Runs a limiter call: a refusal by the limiter (a RateLimiterRes) is
 * returned as is, a failure of the store behind it becomes `store_unavailable`.
 */
export async function limiterCall<T>(call: () => Promise<T>): Promise<T | RateLimiterRes> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof RateLimiterRes) return error;
    throw storeUnavailable(error);
  }
}
