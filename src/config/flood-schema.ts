// Floods of unauthenticated work: the bounds of the memory of refused work per
// address, and load shedding on event-loop delay (their part of the config schema,
// under `limits`). See docs/operations/security.md#floods-of-unauthenticated-work.
import { z } from 'zod';
import * as d from './defaults.js';
import { nonNegativeInt, positiveInt } from './schema-primitives.js';

/**
 * What the gateway remembers of client addresses that keep sending work it
 * refuses (garbage bearer tokens, wrong passwords, logins the full hashing
 * queue turned away): each refusal is a strike against the address, in memory,
 * per instance (src/limits/abuse-guard.ts).
 */
export const AbuseLimitsSchema = z.strictObject({
  /** Strikes in the window from which an address is a suspect: its password checks wait behind those of clean addresses. */
  suspectAfterStrikes: positiveInt.default(d.DEFAULT_ABUSE_SUSPECT_AFTER_STRIKES),
  /** Strikes in the window from which the 401s of an address's refused bearer tokens are held `holdMs` before they are answered (a tarpit). */
  holdAfterStrikes: positiveInt.default(d.DEFAULT_ABUSE_HOLD_AFTER_STRIKES),
  /** Strikes in the window from which an address is refused from the request head (429) for `refuseForMs`, except its cached tokens. */
  refuseAfterStrikes: positiveInt.default(d.DEFAULT_ABUSE_REFUSE_AFTER_STRIKES),
  /** The window strikes are counted in; an address's count starts again after it. */
  strikeWindowMs: positiveInt.default(d.DEFAULT_ABUSE_STRIKE_WINDOW_MS),
  /** How long an address past `refuseAfterStrikes` is refused from the request head (its `Retry-After`); each refused request renews it. */
  refuseForMs: positiveInt.default(d.DEFAULT_ABUSE_REFUSE_FOR_MS),
  /** How long a held refusal waits before it is answered (a flood that waits for its answers slows to its connections per hold). */
  holdMs: nonNegativeInt.default(d.DEFAULT_ABUSE_HOLD_MS),
  /** Refusals held at once; past it they are answered at once. */
  maxHeld: nonNegativeInt.default(d.DEFAULT_ABUSE_MAX_HELD),
  /** Addresses remembered (strikes, refusals, successes, each); past it the oldest are forgotten first. */
  maxAddresses: positiveInt.default(d.DEFAULT_ABUSE_MAX_ADDRESSES),
  /** How long a success (a login or refresh) from an address puts its password checks in the first lane, and exempts its logins from load shedding. */
  trustForS: positiveInt.default(d.DEFAULT_ABUSE_TRUST_FOR_S),
});

/**
 * Load shedding on event-loop delay (src/limits/load-shedder.ts, read by the
 * front door from the request head): while the loop is late, work without a
 * credential known good (logins and refreshes from an address without a
 * recent success, bearer tokens not verified before) is refused with 503
 * `overloaded` and `Retry-After` before work with one (cached tokens, an
 * address's usual logins and refreshes). `/healthz` and `/readyz` say so.
 */
export const LoadSheddingSchema = z
  .strictObject({
    /** Shed at all. */
    enabled: z.boolean().default(true),
    /** How often the event loop's delay is read (its 90th percentile over the interval: a loop late on a tenth of its turns, not one pause). */
    sampleIntervalMs: positiveInt.default(d.DEFAULT_LOAD_SHEDDING_SAMPLE_INTERVAL_MS),
    /** Event-loop delay (ms, 90th percentile of the last interval) from which work without a credential known good is refused. */
    shedUnauthenticatedAtDelayMs: positiveInt.default(d.DEFAULT_SHED_UNAUTHENTICATED_AT_DELAY_MS),
    /** Event-loop delay from which every request on the public listener is refused, cached tokens included; 0: never. */
    shedAllAtDelayMs: nonNegativeInt.default(d.DEFAULT_SHED_ALL_AT_DELAY_MS),
    /**
     * The share of the interval this process's loop must have been busy (0 to 1) for a late loop to shed anything:
     * a loop late because the machine is busy with other processes, while this one mostly waits, gains nothing from refusing work.
     */
    minUtilization: z.number().min(0).max(1).default(d.DEFAULT_LOAD_SHEDDING_MIN_UTILIZATION),
    /** How long shedding goes on after the last late reading: a flood that shedding calmed does not come straight back. */
    coolDownMs: nonNegativeInt.default(d.DEFAULT_LOAD_SHEDDING_COOL_DOWN_MS),
    /** The `Retry-After` seconds of a shed request's 503. */
    retryAfterS: positiveInt.default(d.DEFAULT_LOAD_SHEDDING_RETRY_AFTER_S),
  })
  .refine((shedding) => shedding.shedAllAtDelayMs === 0 || shedding.shedAllAtDelayMs > shedding.shedUnauthenticatedAtDelayMs, {
    path: ['shedAllAtDelayMs'],
    error: 'must be 0 (never) or more than shedUnauthenticatedAtDelayMs: work without a known credential is shed first',
  });
