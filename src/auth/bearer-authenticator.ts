// The one bearer rule: whether a token admits its bearer right now. Every caller asks here (the proxy and WebSocket
// upgrades through proxy/admission.ts, the status endpoint, logout and refresh), so there is one answer to "is this
// token's session alive".
//
// Invariants: admitted when its mode's first check passes (token-check.ts), its session is not revoked, the user is
// enabled and an API key's key unrevoked; a token admitted before is answered from memory synchronously, with the
// user and key checked again; a DPoP-bound token (`cnf.jkt`) needs a fresh proof on every request, cached or not.
// Why: docs/decisions/0011-one-bearer-rule-and-its-cache.md
import type { Logger } from 'pino';
import { gatehouseError, isGatehouseError, type GatehouseError } from '../core/errors.js';
import type { Metrics } from '../observability/metrics.js';
import { bearerToken, plainBearerToken, usesDpopScheme } from './bearer.js';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { dpopChallenge, DpopNonceError, DpopProofError, type DpopProofCheck } from '../dpop/proof-check.js';
import type { IdentityProvider } from '../users/identity-provider.js';
import { Listeners } from '../store/listeners.js';
import type { SessionStore } from '../store/store.js';
import { storeUnavailable } from '../store/store-unavailable.js';
import { TokenError, type TokenClaims } from '../tokens/types.js';
import type { TokenVerifier } from '../tokens/verifier.js';
import { bearerChallenge } from './bearer.js';
import type { Principal } from '../core/principal.js';
import { SESSION_ENDED, SessionTokenCheck, type TokenCheck } from './token-check.js';
import { VerifiedTokenCache } from './token-cache.js';

interface CommonOptions {
  store: SessionStore;
  identity: IdentityProvider;
  /** How many verified tokens are remembered (`tokens.cacheMaxEntries`). */
  maxEntries: number;
  logger: Logger;
  /** Cache hits and misses, refusals by reason. */
  metrics?: Metrics;
  /** Epoch milliseconds; for tests of expiry. */
  now?: () => number;
  /** Checks the proofs of DPoP-bound tokens (`tokens.dpop`); absent, a bound token admits nobody. */
  dpop?: DpopProofCheck;
}

/** Local mode names the verifier (tokens Gatehouse signed); another mode brings its own first check. */
export type BearerAuthenticatorOptions = CommonOptions & ({ verifier: TokenVerifier } | { check: TokenCheck });

type Incrementer = { inc(): void };
/** The RFC 9449 7.1 error a DPoP refusal names in its challenge. */
type DpopRefusal = 'invalid_token' | 'invalid_dpop_proof' | 'use_dpop_nonce';
const NO_COUNT: Incrementer = { inc() {} };

export const INACTIVE = 'user or API key no longer active';
export const BOUND_AS_BEARER = 'a DPoP-bound token needs the DPoP scheme and a proof';
export const NOT_BOUND = 'the token is not DPoP-bound';
export const BOUND_ONLY = 'this route admits only DPoP-bound tokens';

export class BearerAuthenticator {
  readonly #check: TokenCheck;
  readonly #store: SessionStore;
  readonly #identity: IdentityProvider;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #cache: VerifiedTokenCache;
  readonly #metrics: Metrics | undefined;
  readonly #dpop: DpopProofCheck | undefined;
  /** Bound once: a cache hit pays an increment, not a label lookup. */
  readonly #hits: Incrementer;
  readonly #misses: Incrementer;
  /** First checks under way, by token: concurrent first uses share one verification and one store lookup. */
  readonly #inFlight = new Map<string, Promise<Principal>>();
  #closed = false;
  readonly #sessionEnded: Listeners<string>;
  readonly #unsubscribe: Array<() => void>;

  constructor(options: BearerAuthenticatorOptions) {
    this.#now = options.now ?? Date.now;
    this.#cache = new VerifiedTokenCache(options.maxEntries, this.#now);
    this.#metrics = options.metrics;
    this.#dpop = options.dpop;
    this.#hits = options.metrics?.tokenCacheLookups('hit') ?? NO_COUNT;
    this.#misses = options.metrics?.tokenCacheLookups('miss') ?? NO_COUNT;
    this.#check = 'check' in options ? options.check : new SessionTokenCheck(options.verifier, options.store);
    this.#store = options.store;
    this.#identity = options.identity;
    this.#logger = options.logger.child({ component: 'bearer-auth' });
    this.#sessionEnded = new Listeners<string>('session ended', this.#logger);
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
   * A token admitted before answers synchronously; a first check returns a
   * promise. Refusals are GatehouseErrors: `invalid_bearer_token` (with its
   * RFC 6750 challenge), thrown on a hit and rejected otherwise, or
   * `store_unavailable` (rejected) when the session cannot be read.
   *
   * `verified`: the token's claims when the caller has verified it already
   * (refresh does, for the claims it needs): the verification is not repeated.
   */
  authenticate(token: string, verified?: TokenClaims): Principal | Promise<Principal> {
    const cached = this.#cache.get(token);
    if (cached !== undefined) {
      this.#hits.inc();
      if (this.#identity.isActive(cached)) return cached;
      this.#cache.delete(token);
      throw this.#refused(INACTIVE, cached);
    }
    this.#misses.inc();
    let flight = this.#inFlight.get(token);
    if (flight === undefined) {
      flight = this.#firstCheck(token, verified).finally(() => this.#inFlight.delete(token));
      this.#inFlight.set(token, flight);
    }
    return flight;
  }

  /**
   * The principal of a request's token, the one way every bearer check
   * (proxy, WebSocket upgrades, status, account API, logout) asks: the token of
   * `Authorization: Bearer` or `DPoP`, or `token` when it came another way (a
   * WebSocket subprotocol, which can carry no proof). A DPoP-bound token must
   * come with the DPoP scheme and a valid proof of its key, for this request;
   * an unbound one under the DPoP scheme is refused too. A plain bearer token
   * admitted before answers synchronously, as `authenticate` does, unless
   * `boundOnly` (a route's `requireDpop`) refuses it.
   */
  authenticateRequest(req: IncomingMessage, token?: string, boundOnly = false): Principal | Promise<Principal> {
    const presented = token ?? this.presented(req.headers);
    const dpopScheme = token === undefined && usesDpopScheme(req.headers);
    const checked = this.authenticate(presented);
    if (checked instanceof Promise) return checked.then((principal) => this.#confirmed(principal, req, presented, dpopScheme, boundOnly));
    if (checked.confirmationThumbprint === undefined && !dpopScheme && !boundOnly) return checked;
    return this.#confirmed(checked, req, presented, dpopScheme, boundOnly);
  }

  /** RFC 9449 7: the request proves possession of the key a bound token names; a plain one passes as it came, where plain ones may. */
  async #confirmed(principal: Principal, req: IncomingMessage, token: string, dpopScheme: boolean, boundOnly: boolean): Promise<Principal> {
    const jkt = principal.confirmationThumbprint;
    if (jkt === undefined) {
      if (dpopScheme) throw this.#refused(NOT_BOUND, principal, undefined, 'invalid_token');
      if (boundOnly) throw this.#refused(BOUND_ONLY, principal, undefined, 'invalid_token');
      return principal;
    }
    if (!dpopScheme || this.#dpop === undefined) throw this.#refused(BOUND_AS_BEARER, principal, undefined, 'invalid_token');
    try {
      await this.#dpop.check(req, { accessToken: token, jkt });
    } catch (error) {
      if (!(error instanceof DpopProofError)) throw error; // the replay memory could not be asked: 503, never open
      if (error instanceof DpopNonceError) throw this.#refused(error.reason, principal, error, 'use_dpop_nonce', error.nonce);
      throw this.#refused(error.reason, principal, error, 'invalid_dpop_proof');
    }
    return principal;
  }

  /**
   * Whether the request's bearer token was admitted before and still is, from
   * memory only (no first check, no count): the front door lets such a request
   * through from an address it refuses otherwise (server/front-door.ts).
   */
  admitsFromMemory(headers: IncomingHttpHeaders): boolean {
    let token: string;
    try {
      token = this.#tokenOf(headers);
    } catch {
      return false;
    }
    const cached = this.#cache.get(token);
    return cached !== undefined && this.#identity.isActive(cached);
  }

  /** The request's bearer token (RFC 6750 2.1); a missing or malformed header is refused and counted like any refusal. */
  presented(headers: IncomingHttpHeaders): string {
    try {
      return this.#tokenOf(headers);
    } catch (error) {
      this.#metrics?.authRefusals.inc({
        reason: headers.authorization === undefined || headers.authorization === '' ? 'no bearer token' : 'not a bearer token',
      });
      throw error;
    }
  }

  /**
   * The header's token, as `bearerToken` reads it. A token admitted before,
   * sent the plain way, is found without reading its syntax again: the same
   * answer, without a scan of every character on each request (the proxy's,
   * and the front door's while it refuses or sheds).
   */
  #tokenOf(headers: IncomingHttpHeaders): string {
    const plain = plainBearerToken(headers);
    return plain !== undefined && this.#cache.remembers(plain) ? plain : bearerToken(headers);
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
    for (const unsubscribe of this.#unsubscribe) unsubscribe();
    this.#cache.close();
    this.#sessionEnded.clear();
  }

  async #firstCheck(token: string, verified: TokenClaims | undefined): Promise<Principal> {
    const epoch = this.#cache.epoch;
    const startedAt = this.#now();

    let principal: Principal;
    try {
      principal = await this.#check.check(token, verified);
    } catch (error) {
      // The check could not be made (store or provider down): not the token's fault, not a 401.
      if (isGatehouseError(error) && error.code !== 'invalid_bearer_token') throw error;
      const reason = error instanceof TokenError ? error.reason : isGatehouseError(error) ? error.reason : 'invalid bearer token';
      throw this.#refused(reason, undefined, error);
    }
    // A key kept outside memory is looked up once per token, so the synchronous checks after it know the key.
    if (principal.apiKeyId !== undefined && this.#identity.stillHolds && !(await this.#stillHolds(principal))) throw this.#refused(INACTIVE, principal);
    // The store may have read the session just before a revocation that we
    // have heard of since: the revocation wins, sessions never come back.
    if (this.#cache.wasRevoked(principal.sid)) throw this.#refused(SESSION_ENDED, principal);
    if (!this.#identity.isActive(principal)) throw this.#refused(INACTIVE, principal);
    this.#cache.remember(token, principal, epoch, startedAt);
    return principal;
  }

  async #stillHolds(principal: Principal): Promise<boolean> {
    try {
      return await this.#identity.stillHolds!(principal);
    } catch (error) {
      throw storeUnavailable(error);
    }
  }

  #onSessionRevoked(sid: string): void {
    const dropped = this.#cache.revoke(sid);
    if (dropped > 0) this.#logger.debug({ event: 'bearer_cache_revoked', sid, tokens: dropped }, 'dropped the cached tokens of a revoked session');
    this.#sessionEnded.emit(sid);
  }

  #onRevocationFeedResumed(): void {
    const dropped = this.#cache.forgetAll();
    this.#logger.info(
      { event: 'bearer_cache_cleared', dropped },
      'revocation feed resumed: revocations may have been missed, so every cached token check was dropped',
    );
  }

  /**
   * A 401 with its challenge; the reason goes to the debug log, the token never does.
   * `dpop`: refused for DPoP's sake, so the challenge is RFC 9449's (7.1), with the algorithms a proof may use;
   * `nonce`: the server nonce the next proof must carry (RFC 9449 9, `DPoP-Nonce`).
   */
  #refused(reason: string, who?: Pick<Principal, 'sid' | 'sub'>, cause?: unknown, dpop?: DpopRefusal, nonce?: string): GatehouseError {
    // Reasons are the verifier's, the proof check's and this module's fixed texts: a bounded label.
    this.#metrics?.authRefusals.inc({ reason });
    this.#logger.debug({ event: 'bearer_refused', reason, ...(who && { sid: who.sid, sub: who.sub }) }, 'bearer token refused');
    const challenge = dpop === undefined ? bearerChallenge(reason) : dpopChallenge(dpop, reason, this.#dpop?.algorithms ?? []);
    return gatehouseError(dpop === undefined || dpop === 'invalid_token' ? 'invalid_bearer_token' : dpop, {
      reason,
      headers: { 'www-authenticate': challenge, ...(nonce !== undefined && { 'dpop-nonce': nonce }) },
      ...(cause !== undefined && { cause }),
    });
  }
}
