// The one per-address refusal policy of the credential endpoints, counted in
// the store so that every instance counts together: an address whose
// credentials are refused `failuresPerAddress` times in `failureWindowS`
// (whatever the usernames, whichever endpoint's counter) is blocked for
// `addressBlockS`, before anything it sends is checked. Login and refresh
// (login-throttle.ts) and the back-channel logout endpoint
// (logout-token-throttle.ts) each keep a counter of this kind.
import type { RateLimiterRes } from 'rate-limiter-flexible';
import type { LoginLimitsConfig } from '../config/schema.js';
import { limiterCall, msLeft, type Limiter, type LimiterFactory } from './limiters.js';

export type AddressRefusalSettings = Pick<LoginLimitsConfig, 'failuresPerAddress' | 'failureWindowS' | 'addressBlockS'>;

export class AddressRefusals {
  readonly #settings: AddressRefusalSettings;
  readonly #limiter: Limiter;

  /** `inMemoryBlock`: a blocked address is refused by this instance without a store round trip (limiters.ts). */
  constructor(name: string, settings: AddressRefusalSettings, limiters: LimiterFactory, options: { inMemoryBlock?: boolean } = {}) {
    this.#settings = settings;
    // The refusal that reaches failuresPerAddress is the one beyond `points`: it starts the block.
    this.#limiter = limiters.create({
      name,
      points: settings.failuresPerAddress - 1,
      durationS: settings.failureWindowS,
      blockDurationS: settings.addressBlockS,
      ...(options.inMemoryBlock === true && { inMemoryBlock: true }),
    });
  }

  /** How long a block lasts from the refusal that starts it. */
  get blockMs(): number {
    return this.#settings.addressBlockS * 1000;
  }

  /** The address's count now (null: none), for `blockedMs` and for callers that weigh a recent failure. */
  async get(address: string): Promise<RateLimiterRes | null> {
    return limiterCall(() => this.#limiter.get(address));
  }

  /** How long the address is still blocked, by a count `get` read; 0: it may try. */
  blockedMs(count: RateLimiterRes | null): number {
    return count !== null && count.consumedPoints >= this.#settings.failuresPerAddress ? msLeft(count) : 0;
  }

  /** Counts one refusal against the address; true when it is the one that started the block. */
  async refused(address: string): Promise<boolean> {
    const count = await limiterCall(() => this.#limiter.consume(address));
    return count.consumedPoints === this.#settings.failuresPerAddress;
  }
}
