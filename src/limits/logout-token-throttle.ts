// The back-channel logout endpoint is throttled as the token endpoint is
// (login-throttle.ts's per-address rule): refused logout tokens count per
// client address, in the store (every instance counts together), and an
// address past `limits.login.failuresPerAddress` refusals in
// `failureWindowS` is refused with 429 for `addressBlockS` before its
// token is even verified. A provider's good tokens never count.
import type { LoginLimitsConfig } from '../config/schema.js';
import type { GatehouseError } from '../core/errors.js';
import { limiterCall, msLeft, tooManyRequests, type Limiter, type LimiterFactory } from './limiters.js';

export class LogoutTokenThrottle {
  readonly #refusals: Limiter | undefined;

  constructor(settings: LoginLimitsConfig, limiters: LimiterFactory) {
    this.#refusals = settings.enabled
      ? limiters.create({
          name: 'logout-token-refusals',
          points: settings.failuresPerAddress,
          durationS: settings.failureWindowS,
          blockDurationS: settings.addressBlockS,
          inMemoryBlock: true,
        })
      : undefined;
  }

  /** The 429 for an address past its refusals, or undefined: it may try. */
  async check(address: string): Promise<GatehouseError | undefined> {
    if (this.#refusals === undefined) return undefined;
    const res = await limiterCall(() => this.#refusals!.get(address));
    if (res === null || res.consumedPoints <= this.#refusals.points) return undefined;
    return tooManyRequests(msLeft(res), 'too many refused logout tokens from this address');
  }

  /** Counts a refused logout token against the address. */
  async refused(address: string): Promise<void> {
    if (this.#refusals === undefined) return;
    await limiterCall(() => this.#refusals!.consume(address));
  }
}
