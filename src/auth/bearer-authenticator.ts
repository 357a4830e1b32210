// The bearer check of the proxy's hot path. Every proxied request is checked
// here, so a token seen before is answered from memory, synchronously: no
// promise, no store round trip. What keeps that cache honest:
//
// - It is keyed by the whole token. Keyed on a part (say the signature), a
//   forged payload carrying a copied signature would hit a genuine entry.
// - An entry is used only before its token's `exp`: a cached token never
//   outlives its expiry (the verifier's clock tolerance is for tokens it sees,
//   not for how long we may remember them).
// - The user and API key are checked on every hit (in-memory lookups), so a
//   disabled user or a revoked key stops at once.
// - A revocation (from this or any other instance, through the store) drops
//   that session's entries at once, and one that races a first check keeps it
//   out of the cache; when the feed of revocations was interrupted, the whole
//   cache goes, since some may have been missed.
//
// Everything is bounded: the cache by `maxEntries`, the session index by the
// cache, concurrent first checks by the requests in flight, and the recently
// revoked sessions by their own small LRU.
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { gatehouseError, type GatehouseError } from '../http/errors.js';
import type { Identity, IdentityProvider } from '../identity/identity-provider.js';
import { Listeners } from '../store/listeners.js';
import type { SessionRecord, Store } from '../store/store.js';
import { storeUnavailable } from '../store/store-unavailable.js';
import { TokenError, type TokenClaims, type TokenType } from '../tokens/types.js';
import type { TokenVerifier } from '../tokens/verifier.js';
import { bearerChallenge } from './bearer.js';
import type { Principal } from './principal.js';

export interface BearerAuthenticatorOptions {
  verifier: TokenVerifier;
  store: Store;
  identity: IdentityProvider;
  /** How many verified tokens are remembered (`tokens.cacheMaxEntries`). */
  maxEntries: number;
  logger: Logger;
  /** Epoch milliseconds; for tests of expiry. */
  now?: () => number;
}

/** Spec 5.9: a refresh token is a bearer token too. */
const BEARER_TYPES: readonly TokenType[] = ['Bearer', 'Refresh'];

/**
 * How many revoked sessions are remembered, and for how long, to keep a
 * revocation that overtakes a first check from being undone by its caching.
 * A first check slower than the window caches nothing (see #mayCache), so the
 * window only has to outlast the store's own operation timeout.
 */
const RECENTLY_REVOKED_MAX = 10_000;
const RECENTLY_REVOKED_TTL_MS = 5_000;

const SESSION_ENDED = 'session ended';
const INACTIVE = 'user or API key no longer active';

interface Entry {
  readonly principal: Principal;
  /** The argument of `isActive`, built once so that a hit allocates nothing. */
  readonly identity: Pick<Identity, 'sub' | 'apiKeyId'>;
}

export class BearerAuthenticator {
  readonly #verifier: TokenVerifier;
  readonly #store: Store;
  readonly #identity: IdentityProvider;
  readonly #logger: Logger;
  readonly #now: () => number;

  /**
   * No lru-cache `ttl`: the limit is each token's absolute `exp`, checked on
   * every hit anyway, and lru-cache's ttl would add per-entry start/ttl
   * bookkeeping, a second clock (performance.now) and its debounce timers to
   * every get, for nothing. An expired entry that is never asked for again
   * just waits for the LRU to evict it: it holds a slot, never a grant.
   */
  readonly #cache: LRUCache<string, Entry>;
  /** sid → its cached tokens, so a revocation costs O(tokens of that session). Kept in step by `dispose`. */
  readonly #tokensBySid = new Map<string, Set<string>>();
  /** First checks under way, by token: concurrent first uses share one verification and one store lookup. */
  readonly #inFlight = new Map<string, Promise<Principal>>();
  /** Sessions revoked moments ago: a first check that read the session just before it ended must not cache it. */
  readonly #recentlyRevoked: LRUCache<string, true>;
  /**
   * Bumped whenever results of first checks under way can no longer be
   * trusted without a way to tell which: the feed of revocations resumed
   * (some were missed), a recent revocation was forgotten to make room, or
   * close(). A first check caches only when the epoch it started in lasted.
   */
  #epoch = 0;
  #closed = false;
  readonly #sessionEnded: Listeners<string>;
  readonly #unsubscribe: Array<() => void>;

  constructor(options: BearerAuthenticatorOptions) {
    const { maxEntries } = options;
    if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError(`maxEntries must be a positive integer, not ${maxEntries}`);
    }
    this.#verifier = options.verifier;
    this.#store = options.store;
    this.#identity = options.identity;
    this.#logger = options.logger.child({ component: 'bearer-auth' });
    this.#now = options.now ?? Date.now;
    this.#sessionEnded = new Listeners<string>('session ended', this.#logger);

    this.#cache = new LRUCache<string, Entry>({
      max: maxEntries,
      // Every way out (evict, delete, clear, overwrite) passes here, so the
      // index never names a token the cache no longer holds.
      dispose: (entry, token) => this.#unindex(entry.principal.sid, token),
    });
    this.#recentlyRevoked = new LRUCache<string, true>({
      max: RECENTLY_REVOKED_MAX,
      ttl: RECENTLY_REVOKED_TTL_MS,
      // Our clock, so the window and the first check's duration (#mayCache)
      // are measured alike; 0 reads it directly instead of arming a timer to
      // debounce it (this cache is touched per revocation and per miss only).
      perf: { now: this.#now },
      ttlResolution: 0,
      dispose: (_value, _sid, reason) => {
        // A revocation forgotten early: a check under way could no longer
        // tell whether its session ended, so none of them may cache.
        if (reason === 'evict') this.#epoch += 1;
      },
    });

    this.#unsubscribe = [
      this.#store.onSessionRevoked((sid) => this.#onSessionRevoked(sid)),
      this.#store.onRevocationFeedResumed(() => this.#onRevocationFeedResumed()),
    ];
  }

  /** Cached tokens, including expired ones not yet asked for again or evicted. */
  get size(): number {
    return this.#cache.size;
  }

  /**
   * The principal of a valid access or refresh token of an active session.
   * A token checked before answers synchronously; a first check returns a
   * promise. Refusals are GatehouseErrors: `invalid_bearer_token` (with its
   * RFC 6750 challenge), thrown on a hit and rejected otherwise, or
   * `store_unavailable` (rejected) when the session cannot be read.
   */
  authenticate(token: string): Principal | Promise<Principal> {
    const entry = this.#cache.get(token);
    if (entry !== undefined) {
      if (this.#now() < entry.principal.expiresAtMs) {
        if (this.#identity.isActive(entry.identity)) return entry.principal;
        this.#cache.delete(token);
        throw this.#refused(INACTIVE, entry.principal);
      }
      // Expired: forget it and let the verifier give the answer (and the reason).
      this.#cache.delete(token);
    }
    let flight = this.#inFlight.get(token);
    if (flight === undefined) {
      flight = this.#firstCheck(token).finally(() => this.#inFlight.delete(token));
      this.#inFlight.set(token, flight);
    }
    return flight;
  }

  /**
   * Called with the sid of every session revoked (on any instance) while this
   * authenticator runs, whether or not a token of it is cached; possibly more
   * than once for one sid, as the store's own event. Returns the function
   * that removes the listener.
   */
  onSessionEnded(listener: (sid: string) => void): () => void {
    return this.#sessionEnded.add(listener);
  }

  /**
   * Stops listening to the store and forgets every cached token. Checks still
   * work afterwards, uncached: without the revocation feed nothing may be
   * remembered.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#epoch += 1;
    for (const unsubscribe of this.#unsubscribe) unsubscribe();
    this.#cache.clear();
    this.#recentlyRevoked.clear();
    this.#sessionEnded.clear();
  }

  async #firstCheck(token: string): Promise<Principal> {
    const epoch = this.#epoch;
    const startedAt = this.#now();

    let claims: TokenClaims;
    try {
      claims = await this.#verifier.verify(token, BEARER_TYPES);
    } catch (error) {
      throw this.#refused(error instanceof TokenError ? error.reason : 'invalid bearer token', undefined, error);
    }
    // Already known to be over: no need to ask the store.
    if (this.#recentlyRevoked.has(claims.sid)) throw this.#refused(SESSION_ENDED, claims);

    let session: SessionRecord | null;
    try {
      session = await this.#store.getSession(claims.sid);
    } catch (error) {
      throw storeUnavailable(error);
    }
    // The store may have read the session just before a revocation that we
    // have heard of since: the revocation wins, sessions never come back.
    if (session === null || session.sub !== claims.sub || this.#recentlyRevoked.has(claims.sid)) {
      throw this.#refused(SESSION_ENDED, claims);
    }
    const identity: Pick<Identity, 'sub' | 'apiKeyId'> = {
      sub: session.sub,
      ...(session.apiKeyId !== undefined && { apiKeyId: session.apiKeyId }),
    };
    if (!this.#identity.isActive(identity)) throw this.#refused(INACTIVE, claims);

    // Frozen: every later hit hands out this very object.
    const principal: Principal = Object.freeze({
      sub: claims.sub,
      username: claims.preferred_username,
      sid: claims.sid,
      tokenType: claims.typ,
      method: session.method,
      expiresAtMs: claims.exp * 1000,
    });
    if (this.#mayCache(principal, epoch, startedAt)) {
      this.#cache.set(token, { principal, identity });
      // After set(): replacing an entry disposes (unindexes) the old one first.
      this.#index(principal.sid, token);
    }
    return principal;
  }

  /**
   * Whether a first check's result may be remembered. It may be valid and
   * still not cacheable: past `exp` but within the verifier's clock tolerance,
   * or checked across an event that may have ended its session unseen.
   */
  #mayCache(principal: Principal, epoch: number, startedAt: number): boolean {
    const now = this.#now();
    return (
      !this.#closed &&
      epoch === this.#epoch &&
      now < principal.expiresAtMs &&
      // Longer than the window, and a revocation heard meanwhile may already be forgotten.
      now - startedAt < RECENTLY_REVOKED_TTL_MS
    );
  }

  #onSessionRevoked(sid: string): void {
    this.#recentlyRevoked.set(sid, true);
    const tokens = this.#tokensBySid.get(sid);
    if (tokens !== undefined) {
      const count = tokens.size;
      // Each delete unindexes its token through dispose; deleting the element
      // being visited is safe while iterating a Set.
      for (const token of tokens) this.#cache.delete(token);
      this.#logger.debug({ event: 'bearer_cache_revoked', sid, tokens: count }, 'dropped the cached tokens of a revoked session');
    }
    this.#sessionEnded.emit(sid);
  }

  #onRevocationFeedResumed(): void {
    const dropped = this.#cache.size;
    this.#epoch += 1;
    this.#cache.clear();
    this.#logger.info(
      { event: 'bearer_cache_cleared', dropped },
      'revocation feed resumed: revocations may have been missed, so every cached token check was dropped',
    );
  }

  #index(sid: string, token: string): void {
    let tokens = this.#tokensBySid.get(sid);
    if (tokens === undefined) {
      tokens = new Set();
      this.#tokensBySid.set(sid, tokens);
    }
    tokens.add(token);
  }

  #unindex(sid: string, token: string): void {
    const tokens = this.#tokensBySid.get(sid);
    if (tokens === undefined) return;
    tokens.delete(token);
    if (tokens.size === 0) this.#tokensBySid.delete(sid);
  }

  /** A 401 with its challenge; the reason goes to the debug log, the token never does. */
  #refused(reason: string, who?: Pick<TokenClaims, 'sid' | 'sub'>, cause?: unknown): GatehouseError {
    this.#logger.debug({ event: 'bearer_refused', reason, ...(who && { sid: who.sid, sub: who.sub }) }, 'bearer token refused');
    return gatehouseError('invalid_bearer_token', {
      reason,
      headers: { 'www-authenticate': bearerChallenge(reason) },
      ...(cause !== undefined && { cause }),
    });
  }
}
