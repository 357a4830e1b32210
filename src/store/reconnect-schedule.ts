// The Redis client's reconnect backoff, remembered. When a connection drops,
// ioredis asks its retry strategy how long to wait before the next attempt;
// this answers and keeps the answer, so that the store can tell its callers
// how long a retry is pointless: the Retry-After of its 503s.

const MAX_RECONNECT_DELAY_MS = 2_000;
const RECONNECT_JITTER_MS = 100;

/**
 * Doubling from 100 ms up to a 2 s cap. The jitter keeps a fleet of gateways
 * from reconnecting in lockstep when Redis returns.
 */
export function reconnectDelayMs(attempt: number): number {
  const backoff = Math.min(100 * 2 ** Math.max(attempt - 1, 0), MAX_RECONNECT_DELAY_MS);
  return backoff + Math.floor(Math.random() * RECONNECT_JITTER_MS);
}

export interface ReconnectScheduleOptions {
  /** The delay before reconnect attempt `attempt` (from 1); `reconnectDelayMs` by default. */
  delayMs?: (attempt: number) => number;
  /** Epoch milliseconds; for tests. */
  now?: () => number;
}

export class ReconnectSchedule {
  readonly #delayMs: (attempt: number) => number;
  readonly #now: () => number;
  #nextAttemptAt = -Infinity;

  constructor(options: ReconnectScheduleOptions = {}) {
    this.#delayMs = options.delayMs ?? reconnectDelayMs;
    this.#now = options.now ?? Date.now;
  }

  /**
   * ioredis' `retryStrategy` (and its Sentinel and Cluster twins). Never null:
   * null would stop reconnecting for good.
   */
  readonly retryStrategy = (attempt: number): number => {
    const delay = this.#delayMs(attempt);
    this.#nextAttemptAt = this.#now() + delay;
    return delay;
  };

  /** Milliseconds until the next reconnect attempt; 0 when none is waiting. */
  msUntilNextAttempt(): number {
    return Math.max(0, this.#nextAttemptAt - this.#now());
  }
}
