// The one way Gatehouse says that the state store does not answer: a 503
// `store_unavailable` with a Retry-After. The Retry-After is not a constant:
// it is the time until the store next tries to reach its backend (the Redis
// client's reconnect backoff, see reconnect-schedule.ts), since a retry
// before that attempt cannot find anything changed. It is bounded so that a
// client neither comes back at once nor goes away for long.
import { gatehouseError, isGatehouseError, type GatehouseError } from '../core/errors.js';

/** Below a second, a client would come straight back. */
export const RETRY_AFTER_MIN_S = 1;
/** The reconnect backoff is capped at seconds; anything near this bound is a bug, not a reason to send clients away. */
export const RETRY_AFTER_MAX_S = 30;

/**
 * `cause` as a `store_unavailable` error. One that is a GatehouseError already
 * goes on as it is: the store that threw it knew best when to retry. Anything
 * else gets a Retry-After of `msUntilRetry`, in whole seconds rounded up,
 * within [RETRY_AFTER_MIN_S, RETRY_AFTER_MAX_S].
 */
export function storeUnavailable(cause: unknown, msUntilRetry = 0): GatehouseError {
  if (isGatehouseError(cause)) return cause;
  return gatehouseError('store_unavailable', { cause, headers: { 'retry-after': String(retryAfterSeconds(msUntilRetry)) } });
}

/** Milliseconds until a retry may succeed, as a bounded Retry-After value. */
export function retryAfterSeconds(msUntilRetry: number): number {
  const seconds = Number.isNaN(msUntilRetry) ? RETRY_AFTER_MIN_S : Math.ceil(msUntilRetry / 1000);
  return Math.min(RETRY_AFTER_MAX_S, Math.max(RETRY_AFTER_MIN_S, seconds));
}

/**
 * The cause of a `store_unavailable` for a write the store made but could not
 * confirm as durable (no replica acknowledged it in time, see
 * redis-replication.ts): `outcome` is what it did on the node that took it.
 * The write may be lost in a failover; made again, it is idempotent.
 */
export class UnconfirmedWrite<T> extends Error {
  readonly outcome: T;

  constructor(outcome: T, cause: unknown) {
    super('the write was made but no replica confirmed it', { cause });
    this.name = 'UnconfirmedWrite';
    this.outcome = outcome;
  }
}

/** The outcome of a write that was made but not confirmed, when `error` (a store error or its cause) says so. */
export function unconfirmedOutcome<T>(error: unknown): T | undefined {
  const cause = error instanceof UnconfirmedWrite ? error : (error as { cause?: unknown } | null)?.cause;
  return cause instanceof UnconfirmedWrite ? (cause.outcome as T) : undefined;
}
