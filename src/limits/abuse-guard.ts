// What the gateway remembers of addresses that keep sending unauthenticated work it refuses (garbage bearer tokens,
// wrong passwords, logins the full hashing queue turned away): each refusal is a strike against the client address,
// in memory only. From the strikes in the window it says whether an address is a suspect (its password checks wait
// in the last lane), has its 401s held (`holdMs`), or is refused at the head for `refuseForMs`.
//
// Invariants: a success clears the address's record and trusts it for `trustForS`; everything is bounded
// (`maxAddresses` records, oldest dropped first; at most `maxHeld` refusals held); an address with no record costs
// one Map lookup, and none while no address is refused.
// Why: docs/decisions/0001-refuse-floods-from-the-request-head.md
import { EventEmitter } from 'node:events';
import type { Config } from '../config/schema.js';

/** `limits.abuse` (config/flood-schema.ts: each bound's meaning, and its default). */
export type AbuseGuardLimits = Config['limits']['abuse'];

/**
 * Never struck: the host itself (a reverse proxy on the same machine that is
 * not in `server.trustedProxies`, a sidecar, health checks) speaks for many
 * clients, and refusing it would refuse them all; '' is a request whose socket
 * has gone. Other loopback addresses (127.0.0.2 and up) are struck as any.
 */
const SPEAKS_FOR_MANY = new Set(['127.0.0.1', '::1', '']);

interface AddressRecord {
  windowStartMs: number;
  strikes: number;
}

export interface AbuseGuardEvents {
  /** A refusal to `address` is being held before it is answered. */
  held: [address: string];
}

export class AbuseGuard extends EventEmitter<AbuseGuardEvents> {
  readonly #limits: AbuseGuardLimits;
  readonly #now: () => number;
  /** Insertion order is age: the first entry is the oldest, dropped when full. */
  readonly #records = new Map<string, AddressRecord>();
  /** Addresses refused at the head, until when (epoch ms). Empty most of the time: the hot path checks its size only. */
  readonly #refused = new Map<string, number>();
  /** Addresses with a success, when (epoch ms); insertion order is age. */
  readonly #succeeded = new Map<string, number>();
  #held = 0;
  readonly #sweep: NodeJS.Timeout;

  constructor(limits: AbuseGuardLimits, now: () => number = Date.now) {
    super();
    this.#limits = limits;
    this.#now = now;
    // Refusals that ran out are dropped even for addresses never heard from again, so the hot path's check goes back to a size test.
    this.#sweep = setInterval(() => this.#dropExpired(), limits.refuseForMs).unref();
  }

  /** Addresses refused at the head now (or until the next sweep). */
  get refusing(): number {
    return this.#refused.size;
  }

  /** Refusals being held before they are answered. */
  get held(): number {
    return this.#held;
  }

  /** Counts one refused piece of unauthenticated work against `address`. */
  strike(address: string): void {
    if (SPEAKS_FOR_MANY.has(address)) return;
    const now = this.#now();
    let record = this.#records.get(address);
    if (record === undefined || now - record.windowStartMs >= this.#limits.strikeWindowMs) {
      this.#records.delete(address);
      if (this.#records.size >= this.#limits.maxAddresses) this.#records.delete(this.#records.keys().next().value!);
      record = { windowStartMs: now, strikes: 0 };
      this.#records.set(address, record);
    }
    record.strikes += 1;
    if (record.strikes >= this.#limits.refuseAfterStrikes) this.#refuse(address, now);
  }

  /** A success from `address`: what it did before was not an attack, and its logins go first for a while. */
  cleared(address: string): void {
    this.#records.delete(address);
    this.#succeeded.delete(address);
    if (this.#succeeded.size >= this.#limits.maxAddresses) this.#succeeded.delete(this.#succeeded.keys().next().value!);
    this.#succeeded.set(address, this.#now());
  }

  /** The hashing-queue lane of `address` (fair-work-queue.ts): 0 a success within `trustForS`, 1 clean, 2 a suspect (suspicion wins). */
  laneOf(address: string): 0 | 1 | 2 {
    if (this.isSuspect(address)) return 2;
    const at = this.#succeeded.get(address);
    return at !== undefined && this.#now() - at < this.#limits.trustForS * 1000 ? 0 : 1;
  }

  /** Whether `address` has collected enough strikes to wait behind clean addresses. */
  isSuspect(address: string): boolean {
    return this.#hasStrikes(address, this.#limits.suspectAfterStrikes);
  }

  /** Whether `address` has collected enough strikes for its refusals to be held (a tarpit). */
  holdsRefusals(address: string): boolean {
    return this.#hasStrikes(address, this.#limits.holdAfterStrikes);
  }

  #hasStrikes(address: string, bound: number): boolean {
    if (this.#refused.size !== 0 && this.refuses(address)) return true;
    const record = this.#records.get(address);
    return record !== undefined && record.strikes >= bound && this.#now() - record.windowStartMs < this.#limits.strikeWindowMs;
  }

  /** Whether requests from `address` are refused at the head now (a refused request is a strike: a flood that goes on renews it). */
  refuses(address: string): boolean {
    if (this.#refused.size === 0) return false;
    const until = this.#refused.get(address);
    if (until === undefined) return false;
    if (this.#now() < until) return true;
    this.#refused.delete(address);
    return false;
  }

  /** Answers a refusal to `address` after `holdMs` (at once when `maxHeld` are held already). */
  hold(address: string, answer: () => void): void {
    if (this.#held >= this.#limits.maxHeld) {
      answer();
      return;
    }
    this.#held += 1;
    this.emit('held', address);
    setTimeout(() => {
      this.#held -= 1;
      answer();
    }, this.#limits.holdMs).unref();
  }

  /**
   * The one tarpit, for every refusal of an address's work (the front door's,
   * admission's): `strike` counts the refusal against the address first; the
   * answer is held `holdMs` when `hold` is `always`, or when it is `earned` and
   * the address has `holdAfterStrikes` strikes, and given at once otherwise.
   */
  answerRefusal(address: string, answer: () => void, how: { strike: boolean; hold: 'always' | 'earned' }): void {
    if (how.strike) this.strike(address);
    if (how.hold === 'always' || this.holdsRefusals(address)) this.hold(address, answer);
    else answer();
  }

  /** Seconds a refused client should wait: the rest of its refusal. */
  get retryAfterS(): number {
    return Math.ceil(this.#limits.refuseForMs / 1000);
  }

  close(): void {
    clearInterval(this.#sweep);
  }

  #refuse(address: string, now: number): void {
    if (!this.#refused.has(address) && this.#refused.size >= this.#limits.maxAddresses) this.#refused.delete(this.#refused.keys().next().value!);
    this.#refused.set(address, now + this.#limits.refuseForMs);
  }

  #dropExpired(): void {
    const now = this.#now();
    for (const [address, until] of this.#refused) if (now >= until) this.#refused.delete(address);
  }
}
