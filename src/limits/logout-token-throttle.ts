// The back-channel logout endpoint is throttled as the token endpoint is, by
// the one per-address refusal policy (address-refusals.ts) on a counter of
// its own: refused logout tokens count per client address, in the store
// (every instance counts together), and an address with
// `limits.login.failuresPerAddress` refusals in `failureWindowS` is refused
// with 429 for `addressBlockS` before its token is even verified. A
// provider's good tokens never count.
import type { LoginLimitsConfig } from '../config/schema.js';
import type { GatehouseError } from '../core/errors.js';
import { AddressRefusals } from './address-refusals.js';
import { tooManyRequests, type LimiterFactory } from './limiters.js';

export class LogoutTokenThrottle {
  readonly #refusals: AddressRefusals | undefined;

  constructor(settings: LoginLimitsConfig, limiters: LimiterFactory) {
    this.#refusals = settings.enabled ? new AddressRefusals('logout-token-refusals', settings, limiters, { inMemoryBlock: true }) : undefined;
  }

  /** The 429 for an address past its refusals, or undefined: it may try. */
  async check(address: string): Promise<GatehouseError | undefined> {
    if (this.#refusals === undefined) return undefined;
    const blockedMs = this.#refusals.blockedMs(await this.#refusals.get(address));
    return blockedMs > 0 ? tooManyRequests(blockedMs, 'too many refused logout tokens from this address') : undefined;
  }

  /** Counts a refused logout token against the address. */
  async refused(address: string): Promise<void> {
    if (this.#refusals === undefined) return;
    await this.#refusals.refused(address);
  }
}
