// What the bearer check remembers, and when it must forget. The rule lives in bearer-authenticator.ts; this module
// only keeps its answers honest.
//
// Invariants: keyed by the whole token; an entry is used only before its token's `exp`; a revocation drops that
// session's entries at once (and keeps a racing first check out); an interrupted revocation feed clears the whole
// cache; bounded by `maxEntries`, the session index by the cache, revoked sessions by their own small LRU.
// Why: docs/decisions/0011-one-bearer-rule-and-its-cache.md
import { LRUCache } from 'lru-cache';
import type { Principal } from '../core/principal.js';

/**
 * How many revoked sessions are remembered, and for how long, to keep a
 * revocation that overtakes a first check from being undone by its caching.
 * A first check slower than the window caches nothing (see `remember`), so the
 * window only has to outlast the store's own operation timeout.
 */
const RECENTLY_REVOKED_MAX = 10_000;
const RECENTLY_REVOKED_TTL_MS = 5_000;

export class VerifiedTokenCache {
  readonly #now: () => number;
  /**
   * No lru-cache `ttl`: the limit is each token's absolute `exp`, checked on
   * every hit anyway, and lru-cache's ttl would add per-entry start/ttl
   * bookkeeping, a second clock (performance.now) and its debounce timers to
   * every get, for nothing. An expired entry that is never asked for again
   * just waits for the LRU to evict it: it holds a slot, never a grant.
   */
  readonly #tokens: LRUCache<string, Principal>;
  /** sid → its cached tokens, so a revocation costs O(tokens of that session). Kept in step by `dispose`. */
  readonly #tokensBySid = new Map<string, Set<string>>();
  /** Sessions revoked moments ago: a first check that read the session just before it ended must not cache it. */
  readonly #recentlyRevoked: LRUCache<string, true>;
  /**
   * Bumped whenever results of first checks under way can no longer be
   * trusted without a way to tell which: the feed of revocations resumed
   * (some were missed), a recent revocation was forgotten to make room, or
   * close(). A first check is remembered only when the epoch it started in lasted.
   */
  #epoch = 0;
  #closed = false;

  constructor(maxEntries: number, now: () => number) {
    if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError(`maxEntries must be a positive integer, not ${maxEntries}`);
    }
    this.#now = now;
    this.#tokens = new LRUCache<string, Principal>({
      max: maxEntries,
      // Every way out (evict, delete, clear, overwrite) passes here, so the
      // index never names a token the cache no longer holds.
      dispose: (principal, token) => this.#unindex(principal.sid, token),
    });
    this.#recentlyRevoked = new LRUCache<string, true>({
      max: RECENTLY_REVOKED_MAX,
      ttl: RECENTLY_REVOKED_TTL_MS,
      // Our clock, so the window and the first check's duration (`remember`)
      // are measured alike; 0 reads it directly instead of arming a timer to
      // debounce it (this cache is touched per revocation and per miss only).
      perf: { now },
      ttlResolution: 0,
      dispose: (_value, _sid, reason) => {
        // A revocation forgotten early: a check under way could no longer
        // tell whether its session ended, so none of them may be remembered.
        if (reason === 'evict') this.#epoch += 1;
      },
    });
  }

  /** Cached tokens, including expired ones not yet asked for again or evicted. */
  get size(): number {
    return this.#tokens.size;
  }

  /** Noted by a first check when it starts, and handed back to `remember`. */
  get epoch(): number {
    return this.#epoch;
  }

  /** The principal of a token checked before, until the token's `exp`; an expired entry is dropped. */
  get(token: string): Principal | undefined {
    const principal = this.#tokens.get(token);
    if (principal === undefined) return undefined;
    if (this.#now() < principal.expiresAtMs) return principal;
    this.#tokens.delete(token);
    return undefined;
  }

  /** Whether the token was admitted and is still held, expired or not (its syntax is known good); recency is left as it is. */
  remembers(token: string): boolean {
    return this.#tokens.has(token, { updateAgeOnHas: false });
  }

  delete(token: string): void {
    this.#tokens.delete(token);
  }

  /** Whether the session was revoked within the window (a first check that read it before must not pass). */
  wasRevoked(sid: string): boolean {
    return this.#recentlyRevoked.has(sid);
  }

  /**
   * Remembers a first check's result, unless it may be stale: past `exp` but
   * within the verifier's clock tolerance, or checked across an event that may
   * have ended its session unseen.
   */
  remember(token: string, principal: Principal, epoch: number, startedAt: number): void {
    const now = this.#now();
    const trustworthy =
      !this.#closed &&
      epoch === this.#epoch &&
      now < principal.expiresAtMs &&
      // Longer than the window, and a revocation heard meanwhile may already be forgotten.
      now - startedAt < RECENTLY_REVOKED_TTL_MS;
    if (!trustworthy) return;
    this.#tokens.set(token, principal);
    // After set(): replacing an entry disposes (unindexes) the old one first.
    let tokens = this.#tokensBySid.get(principal.sid);
    if (tokens === undefined) {
      tokens = new Set();
      this.#tokensBySid.set(principal.sid, tokens);
    }
    tokens.add(token);
  }

  /** A session ended: its tokens go, and checks under way will not bring them back. Returns how many went. */
  revoke(sid: string): number {
    this.#recentlyRevoked.set(sid, true);
    const tokens = this.#tokensBySid.get(sid);
    if (tokens === undefined) return 0;
    const count = tokens.size;
    // Each delete unindexes its token through dispose; deleting the element
    // being visited is safe while iterating a Set.
    for (const token of tokens) this.#tokens.delete(token);
    return count;
  }

  /** Revocations may have been missed: nothing remembered, nor being checked, can be trusted. Returns how many went. */
  forgetAll(): number {
    const dropped = this.#tokens.size;
    this.#epoch += 1;
    this.#tokens.clear();
    return dropped;
  }

  /** Forgets everything and remembers nothing from now on. */
  close(): void {
    this.#closed = true;
    this.forgetAll();
    this.#recentlyRevoked.clear();
  }

  #unindex(sid: string, token: string): void {
    const tokens = this.#tokensBySid.get(sid);
    if (tokens === undefined) return;
    tokens.delete(token);
    if (tokens.size === 0) this.#tokensBySid.delete(sid);
  }
}
