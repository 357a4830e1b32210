// Login throttling: a username+address pair waits longer after each failure past `freeFailures`, an address that
// fails too often (any usernames, refresh tokens too) is blocked, and a username failed from many addresses is
// guarded so that only addresses with no recent failure may try it.
//
// Invariants: every check happens before the password is hashed; a username is never locked for everyone; usernames
// enter keys only as digests (what was typed may be a password).
// Why: docs/decisions/0004-login-throttling.md
import { createHash } from 'node:crypto';
import type { LoginLimitsConfig } from '../config/schema.js';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { AddressRefusals } from './address-refusals.js';
import { limiterCall, msLeft, tooManyRequests, type Limiter, type LimiterFactory } from './limiters.js';

/** Enough for any count that matters: the counters below never refuse by themselves. */
const UNBOUNDED = 1_000_000_000;

export const PAIR_FAILURES = 'login-pair';
export const PAIR_WAIT = 'login-wait';
export const ADDRESS_FAILURES = 'login-address';
export const USERNAME_FAILURES = 'login-username';

/** What a failure started, for the audit log. */
/** What failed logins started, and in how long it lifts by itself (unless an operator clears it first). */
export interface Lockout {
  kind: 'pair_wait' | 'address_blocked' | 'username_guarded';
  endsInMs: number;
}

export function usernameKey(username: string): string {
  return createHash('sha256').update(username, 'utf8').digest('base64url').slice(0, 22);
}

export class LoginThrottle {
  readonly #limits: LoginLimitsConfig;
  readonly #pairFailures: Limiter;
  readonly #pairWait: Limiter;
  readonly #addressFailures: AddressRefusals;
  readonly #usernameFailures: Limiter;

  constructor(limits: LoginLimitsConfig, limiters: LimiterFactory) {
    this.#limits = limits;
    const window = limits.failureWindowS;
    this.#pairFailures = limiters.create({ name: PAIR_FAILURES, points: UNBOUNDED, durationS: window });
    // Only ever set by block(): one point is never consumed.
    this.#pairWait = limiters.create({ name: PAIR_WAIT, points: 1, durationS: 1 });
    this.#addressFailures = new AddressRefusals(ADDRESS_FAILURES, limits, limiters);
    this.#usernameFailures = limiters.create({ name: USERNAME_FAILURES, points: UNBOUNDED, durationS: window });
  }

  get enabled(): boolean {
    return this.#limits.enabled;
  }

  /** Throws a 429 when this username may not be tried from this address now. */
  async checkLogin(username: string, address: string): Promise<void> {
    if (!this.enabled) return;
    const user = usernameKey(username);
    const [byAddress, wait, byUsername] = await Promise.all([
      this.#addressFailures.get(address),
      this.#get(this.#pairWait, `${user}:${address}`),
      this.#get(this.#usernameFailures, user),
    ]);
    this.#refuseBlockedAddress(byAddress);
    const waitMs = msLeft(wait);
    if (waitMs > 0) throw tooManyRequests(waitMs, 'too many failed logins: wait before the next attempt');
    const addressFailed = msLeft(byAddress) > 0 && (byAddress?.consumedPoints ?? 0) > 0;
    const guardedMs = (byUsername?.consumedPoints ?? 0) >= this.#limits.failuresPerUsername ? msLeft(byUsername) : 0;
    if (guardedMs > 0 && addressFailed) throw tooManyRequests(Math.min(guardedMs, this.#limits.maxWaitS * 1000), 'too many failed logins for this user');
  }

  /** Throws a 429 when this address is blocked: what is asked without a username (a refresh token, a passkey) is throttled by it alone. */
  async checkAddress(address: string): Promise<void> {
    if (!this.enabled) return;
    this.#refuseBlockedAddress(await this.#addressFailures.get(address));
  }

  /** Counts a failed login; tells what it started, if anything. */
  async loginFailed(username: string, address: string): Promise<Lockout | undefined> {
    if (!this.enabled) return undefined;
    const user = usernameKey(username);
    const pair = `${user}:${address}`;
    const [byPair, addressBlocked, byUsername] = await Promise.all([
      limiterCall(() => this.#pairFailures.penalty(pair)),
      this.#addressFailures.refused(address),
      limiterCall(() => this.#usernameFailures.penalty(user)),
    ]);
    const beyondFree = byPair.consumedPoints - this.#limits.freeFailures;
    // 2^30 s is far past any maxWaitS: the exponent stops there.
    const waitS = beyondFree > 0 ? Math.min(this.#limits.firstWaitS * 2 ** Math.min(beyondFree - 1, 30), this.#limits.maxWaitS) : 0;
    if (waitS > 0) await limiterCall(() => this.#pairWait.block(pair, waitS));
    if (addressBlocked) return this.#addressBlock();
    if (waitS > 0) return { kind: 'pair_wait', endsInMs: waitS * 1000 };
    // The guard holds until the username's failure window ends.
    if (byUsername.consumedPoints === this.#limits.failuresPerUsername) return { kind: 'username_guarded', endsInMs: msLeft(byUsername) };
    return undefined;
  }

  /** Counts a refusal without a username (an invalid refresh token, a passkey answer) against its address; tells the block it started, if it did. */
  async addressRefused(address: string): Promise<Lockout | undefined> {
    if (!this.enabled) return undefined;
    return (await this.#addressFailures.refused(address)) ? this.#addressBlock() : undefined;
  }

  /** A block of the address, started now. */
  #addressBlock(): Lockout {
    return { kind: 'address_blocked', endsInMs: this.#addressFailures.blockMs };
  }

  /** A success clears the pair's failures and wait: the user's own typos do not pile up. */
  async loginSucceeded(username: string, address: string): Promise<void> {
    if (!this.enabled) return;
    const pair = `${usernameKey(username)}:${address}`;
    await Promise.all([limiterCall(() => this.#pairFailures.delete(pair)), limiterCall(() => this.#pairWait.delete(pair))]);
  }

  #refuseBlockedAddress(byAddress: RateLimiterRes | null): void {
    const blockedMs = this.#addressFailures.blockedMs(byAddress);
    if (blockedMs > 0) throw tooManyRequests(blockedMs, 'too many failed attempts from this address');
  }

  async #get(limiter: Limiter, key: string): Promise<RateLimiterRes | null> {
    const res = await limiterCall(() => limiter.get(key));
    return res;
  }
}
