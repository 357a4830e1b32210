// What each session holds open on this instance, and when each of it must end: WebSocket tunnels (websocket.ts),
// proxied HTTP exchanges in progress (proxy-handler.ts) and long polls of the status endpoint
// (async-requests/status-routes.ts). One registry for all, so whatever ends a session (revoked on any instance, its user
// disabled or key revoked, a role taken away, its token's or session's end, the gateway stopping) ends everything it
// opened, the same way.
//
// Invariants: every end is an event or a timer, nothing polls; registering is a Map lookup and a link in a list,
// removal an unlink (lists, not Sets); a session's group and its one timer live as long as the session.
// Why: docs/decisions/0005-one-registry-of-session-holdings.md
import type { Logger } from 'pino';
import type { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import type { Principal } from '../core/principal.js';
import type { IdentityProvider } from '../users/identity-provider.js';

export type HoldingEnd = 'session ended' | 'user or API key no longer active' | 'access revoked' | 'token expired' | 'gateway stopping';

/** Something a session holds open. */
export interface Holding {
  /** What it is, for the log line when the registry ends it. */
  readonly kind: 'websocket' | 'http' | 'long poll';
  /** Who opened it; null on an `auth: none` route (such a holding ends only with the gateway). */
  readonly principal: Principal | null;
  /** Ends it, both sides. Called once at most, after the registry has forgotten it. */
  end(reason: HoldingEnd): void;
  /** Whether its route's rule still lets the principal in (a role may have been taken away); absent: always. */
  stillAllowed?(): boolean;
}

export interface SessionHoldingsOptions {
  sessions: Pick<BearerAuthenticator, 'onSessionEnded'>;
  identity: Pick<IdentityProvider, 'isActive' | 'onChange'>;
  logger: Logger;
  /** Epoch milliseconds; the deadlines are compared with it. */
  now?: () => number;
  /** How many idle sessions (nothing open) keep their group until they end; beyond it an emptied group is dropped at once. */
  maxIdleSessions?: number;
}

/** One holding's place in its list: made when it is added, unlinked when it ends. */
interface Entry {
  readonly holding: Holding;
  /** Its session's group; null on a public route's list. */
  readonly group: Group | null;
  prev: Entry | null;
  next: Entry | null;
  /** The timer for its token's expiry, when its route ends it then; most have none. */
  expiry: NodeJS.Timeout | undefined;
}

/** A list of entries, newest first. */
interface EntryList {
  head: Entry | null;
  size: number;
}

/** One session's holdings and the timer for the session's end. */
interface Group extends EntryList {
  readonly sid: string;
  deadline: number;
  timer: NodeJS.Timeout | undefined;
  /** Empty and kept for the session's next request (counted in `#idle`). */
  idle: boolean;
}

/** Where the registry keeps a holding's entry: on the holding itself, so finding it costs no lookup. */
const ENTRY = Symbol('session holdings entry');
type Tracked = Holding & { [ENTRY]?: Entry | undefined };

function link(list: EntryList, entry: Entry): void {
  entry.next = list.head;
  if (list.head !== null) list.head.prev = entry;
  list.head = entry;
  list.size += 1;
}

function unlink(list: EntryList, entry: Entry): void {
  if (entry.prev !== null) entry.prev.next = entry.next;
  else list.head = entry.next;
  if (entry.next !== null) entry.next.prev = entry.prev;
  entry.prev = entry.next = null;
  list.size -= 1;
}

/** The holdings of a list, copied: ending one unlinks it. */
function holdingsOf(list: EntryList): Holding[] {
  const out: Holding[] = [];
  for (let entry = list.head; entry !== null; entry = entry.next) out.push(entry.holding);
  return out;
}

/** The longest a timer may wait (setTimeout's 32-bit limit); a later deadline is waited for in steps. */
const MAX_TIMER_MS = 2_147_483_647;
const DEFAULT_MAX_IDLE_SESSIONS = 10_000;

export class SessionHoldings {
  readonly #identity: SessionHoldingsOptions['identity'];
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #maxIdle: number;
  readonly #bySession = new Map<string, Group>();
  /** Public routes' holdings: they end with the gateway only. */
  readonly #public: EntryList = { head: null, size: 0 };
  readonly #stopListening: Array<() => void>;
  #count = 0;
  #idle = 0;

  constructor(options: SessionHoldingsOptions) {
    this.#identity = options.identity;
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
    this.#maxIdle = options.maxIdleSessions ?? DEFAULT_MAX_IDLE_SESSIONS;
    this.#stopListening = [options.sessions.onSessionEnded((sid) => this.#endSession(sid)), options.identity.onChange(() => this.#recheckIdentities())];
  }

  /** Holdings open now. */
  get size(): number {
    return this.#count;
  }

  /** Open holdings of one kind (the metrics' open tunnels). */
  count(kind: Holding['kind']): number {
    let n = 0;
    for (const list of [this.#public, ...this.#bySession.values()]) {
      for (let entry = list.head; entry !== null; entry = entry.next) if (entry.holding.kind === kind) n += 1;
    }
    return n;
  }

  /**
   * Tracks an open holding until it ends or `remove` forgets it.
   * `endOnExpiry`: its route ends it when its token expires
   * (`closeWebSocketOnExpiry`, `endExchangesOnExpiry`); it ends at its
   * session's end in any case.
   */
  add(holding: Holding, endOnExpiry: boolean): void {
    const tracked = holding as Tracked;
    if (tracked[ENTRY] !== undefined) return;
    const { principal } = holding;
    if (principal === null) {
      this.#track(tracked, this.#public, null);
      return;
    }
    // Admission refuses such a token; a holding registered late still never outlives its session.
    if (principal.sessionEndsAtMs <= this.#now()) {
      holding.end('session ended');
      return;
    }
    let group = this.#bySession.get(principal.sid);
    if (group === undefined) {
      group = { sid: principal.sid, head: null, size: 0, deadline: principal.sessionEndsAtMs, timer: undefined, idle: false };
      this.#bySession.set(principal.sid, group);
      this.#armSession(group);
    } else {
      if (group.idle) {
        group.idle = false;
        this.#idle -= 1;
      }
      // One session, one end; a principal read later may know an earlier one.
      if (principal.sessionEndsAtMs < group.deadline) {
        group.deadline = principal.sessionEndsAtMs;
        clearTimeout(group.timer);
        this.#armSession(group);
      }
    }
    const entry = this.#track(tracked, group, group);
    // A token never outlives its session, so its expiry is the earlier deadline when it counts.
    if (endOnExpiry && principal.expiresAtMs < group.deadline) this.#armExpiry(entry, principal.expiresAtMs);
  }

  /** Forgets a holding that ended by itself (either side went away); harmless when it is not tracked. */
  remove(holding: Holding): void {
    this.#forget(holding);
  }

  /**
   * Ends every holding of one kind, public routes' included: the gateway
   * stopping ends its tunnels at once, while HTTP exchanges get the drain's grace.
   */
  endAll(kind: Holding['kind'], reason: HoldingEnd = 'gateway stopping'): void {
    for (const list of [this.#public, ...this.#bySession.values()]) {
      for (const holding of holdingsOf(list)) if (holding.kind === kind) this.#end(holding, reason);
    }
  }

  /** Stops listening and forgets every session's timer; what is still open is left to its owner (the drain cuts it). */
  close(): void {
    for (const stop of this.#stopListening.splice(0)) stop();
    for (const list of [this.#public, ...this.#bySession.values()]) for (const holding of holdingsOf(list)) this.#forget(holding);
    for (const group of [...this.#bySession.values()]) this.#drop(group);
    this.#count = 0;
  }

  #track(holding: Tracked, list: EntryList, group: Group | null): Entry {
    const entry: Entry = { holding, group, prev: null, next: null, expiry: undefined };
    holding[ENTRY] = entry;
    link(list, entry);
    this.#count += 1;
    return entry;
  }

  #armSession(group: Group): void {
    const wait = group.deadline - this.#now();
    if (wait <= 0) {
      this.#endSession(group.sid, 'session ended');
      return;
    }
    // Re-armed rather than ended when it fires: a deadline beyond the timer's
    // range is reached in steps, and a clock that reads a little behind the
    // timer's never ends anything before its deadline.
    group.timer = setTimeout(() => this.#armSession(group), Math.min(wait, MAX_TIMER_MS));
    group.timer.unref();
  }

  #armExpiry(entry: Entry, deadline: number): void {
    const wait = deadline - this.#now();
    if (wait <= 0) {
      entry.expiry = undefined;
      this.#end(entry.holding, 'token expired');
      return;
    }
    entry.expiry = setTimeout(() => this.#armExpiry(entry, deadline), Math.min(wait, MAX_TIMER_MS));
    entry.expiry.unref();
  }

  #endSession(sid: string, reason: HoldingEnd = 'session ended'): void {
    const group = this.#bySession.get(sid);
    if (group === undefined) return;
    for (const holding of holdingsOf(group)) this.#end(holding, reason);
    this.#drop(group);
  }

  /** The users changed: whatever a user or key no longer active holds, or a route's rule no longer admits, ends. */
  #recheckIdentities(): void {
    for (const group of [...this.#bySession.values()]) {
      for (const holding of holdingsOf(group)) {
        const principal = holding.principal!;
        if (!this.#identity.isActive(principal)) this.#end(holding, 'user or API key no longer active');
        else if (holding.stillAllowed !== undefined && !holding.stillAllowed()) this.#end(holding, 'access revoked');
      }
    }
  }

  #end(holding: Holding, reason: HoldingEnd): void {
    if (!this.#forget(holding)) return;
    // Why the gateway cut it, once per holding (its access line follows when the client side has closed).
    const { principal } = holding;
    if (principal !== null && reason !== 'gateway stopping') {
      this.#logger.info({ sid: principal.sid, sub: principal.sub, kind: holding.kind, reason }, 'ended with its session');
    }
    holding.end(reason);
  }

  /** True when the holding was still tracked. */
  #forget(holding: Holding): boolean {
    const tracked = holding as Tracked;
    const entry = tracked[ENTRY];
    if (entry === undefined) return false;
    tracked[ENTRY] = undefined;
    const { group } = entry;
    unlink(group ?? this.#public, entry);
    this.#count -= 1;
    if (entry.expiry !== undefined) clearTimeout(entry.expiry);
    if (group !== null && group.size === 0) {
      // Kept for the session's next request, unless too many sessions sit idle.
      if (this.#idle < this.#maxIdle) {
        group.idle = true;
        this.#idle += 1;
      } else this.#drop(group);
    }
    return true;
  }

  /** Forgets a session's group (its holdings are gone or ended) and its timer. */
  #drop(group: Group): void {
    if (this.#bySession.get(group.sid) !== group) return;
    if (group.idle) {
      group.idle = false;
      this.#idle -= 1;
    }
    clearTimeout(group.timer);
    this.#bySession.delete(group.sid);
  }
}
