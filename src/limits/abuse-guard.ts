// What the gateway remembers of addresses that keep sending unauthenticated
// work it refuses: garbage bearer tokens, wrong passwords, logins the full
// hashing queue turned away. Each refusal is a strike against the client
// address, in memory only (a lookup, no store round trip).
//
// - An address with `suspectAfter` strikes in the window is a suspect: its
//   password checks wait behind those of clean addresses (fair-work-queue.ts)
//   and, when the suspects' queue is full, are refused from the request head.
// - An address with `holdAfter` strikes gets the 401 of each bearer token a
//   first check refuses late, after `holdMs` (a tarpit, as sshd delays a
//   failed authentication).
// - An address with `strikes` strikes in the window is refused at the head for
//   `refuseForMs` (each refused request is a strike, so a flood that goes on
//   stays refused), before its request is routed or its body parsed, except a
//   request whose bearer token was verified before (the public listener asks
//   the token cache). Each such
//   refusal is held `holdMs` before it is answered, as a load balancer's
//   tarpit does: a flood that sends its next request when the last is answered
//   slows to its connections per `holdMs`, and a held request costs a timer,
//   not CPU. At most `maxHeld` are held; past it they are answered at once.
//
// A success (login, refresh) clears the address's record (a user who mistyped
// is not a suspect) and puts its password checks in the first lane for
// `trustForMs`: a real user's usual address goes ahead of a flood. Everything is bounded: `maxAddresses` records, oldest
// dropped first. Requests from addresses with no record pay one Map lookup,
// and none at all while no address is refused.
import { EventEmitter } from 'node:events';

export interface AbuseGuardLimits {
  /** Strikes in the window from which an address's password checks wait behind clean addresses'. */
  suspectAfter: number;
  /** Strikes in the window from which the 401s of an address's refused bearer tokens are held before they are answered. */
  holdAfter: number;
  /** Strikes in the window from which an address is refused at the head. */
  strikes: number;
  windowMs: number;
  refuseForMs: number;
  holdMs: number;
  maxHeld: number;
  maxAddresses: number;
  /** How long a success puts an address's logins in the first lane. */
  trustForMs: number;
}

/**
 * 200 refusals in 10 s (20 a second, sustained) is far beyond a person
 * mistyping or a client with an expired token (which stops at its first 401
 * and refreshes), and beyond the login throttle's own per-address count (50
 * failures, then 429s answered as before); a flood reaches it within a second.
 * A held refusal is answered after 1 s, the Retry-After of the hashing queue's
 * own refusals.
 */
export const DEFAULT_ABUSE_LIMITS: AbuseGuardLimits = {
  suspectAfter: 3,
  holdAfter: 20,
  strikes: 200,
  windowMs: 10_000,
  refuseForMs: 30_000,
  holdMs: 1_000,
  maxHeld: 4_096,
  maxAddresses: 65_536,
  trustForMs: 24 * 3_600_000,
};

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

  constructor(limits: AbuseGuardLimits = DEFAULT_ABUSE_LIMITS, now: () => number = Date.now) {
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
    if (record === undefined || now - record.windowStartMs >= this.#limits.windowMs) {
      this.#records.delete(address);
      if (this.#records.size >= this.#limits.maxAddresses) this.#records.delete(this.#records.keys().next().value!);
      record = { windowStartMs: now, strikes: 0 };
      this.#records.set(address, record);
    }
    record.strikes += 1;
    if (record.strikes >= this.#limits.strikes) this.#refuse(address, now);
  }

  /** A success from `address`: what it did before was not an attack, and its logins go first for a while. */
  cleared(address: string): void {
    this.#records.delete(address);
    this.#succeeded.delete(address);
    if (this.#succeeded.size >= this.#limits.maxAddresses) this.#succeeded.delete(this.#succeeded.keys().next().value!);
    this.#succeeded.set(address, this.#now());
  }

  /** The hashing-queue lane of `address` (fair-work-queue.ts): 0 a success within `trustForMs`, 1 clean, 2 a suspect (suspicion wins). */
  laneOf(address: string): 0 | 1 | 2 {
    if (this.isSuspect(address)) return 2;
    const at = this.#succeeded.get(address);
    return at !== undefined && this.#now() - at < this.#limits.trustForMs ? 0 : 1;
  }

  /** Whether `address` has collected enough strikes to wait behind clean addresses. */
  isSuspect(address: string): boolean {
    return this.#hasStrikes(address, this.#limits.suspectAfter);
  }

  /** Whether `address` has collected enough strikes for its refusals to be held (a tarpit). */
  holdsRefusals(address: string): boolean {
    return this.#hasStrikes(address, this.#limits.holdAfter);
  }

  #hasStrikes(address: string, bound: number): boolean {
    if (this.#refused.size !== 0 && this.refuses(address)) return true;
    const record = this.#records.get(address);
    return record !== undefined && record.strikes >= bound && this.#now() - record.windowStartMs < this.#limits.windowMs;
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
