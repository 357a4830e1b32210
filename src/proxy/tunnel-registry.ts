// Every open WebSocket tunnel, and when each must end. A tunnel lives on its
// session, so it ends when the session ends for any reason:
//
// - logout, on this or any instance (the bearer rule's revocation feed);
// - its user disabled, or the API key its session came from revoked (the
//   identity provider announces every reload of the users file, which each
//   instance watches, and each tunnel's principal is asked about again);
// - its token's expiry, unless the route keeps tunnels past it
//   (`closeWebSocketOnExpiry: false`), and in any case the session's own end:
//   a tunnel opened with a refresh token, or kept past its access token,
//   never outlives its session;
// - the gateway stopping (public routes' tunnels too).
//
// Every one of these is an event or a timer; nothing polls.
import type { Logger } from 'pino';
import type { BearerAuthenticator } from '../auth/bearer-authenticator.js';
import type { Principal } from '../core/principal.js';
import type { IdentityProvider } from '../identity/identity-provider.js';

export type TunnelEnd = 'session ended' | 'user or API key no longer active' | 'access revoked' | 'token expired' | 'gateway stopping';

export interface Tunnel {
  /** Who opened it; null on an `auth: none` route (such a tunnel ends only with the gateway). */
  readonly principal: Principal | null;
  /** Closes both sides. Called once at most, after the registry has forgotten the tunnel. */
  end(reason: TunnelEnd): void;
  /** Whether its route's rule still lets the principal in (a role may have been taken away); absent: always. */
  stillAllowed?(): boolean;
}

export interface TunnelRegistryOptions {
  sessions: Pick<BearerAuthenticator, 'onSessionEnded'>;
  identity: Pick<IdentityProvider, 'isActive' | 'onChange'>;
  logger: Logger;
  /** Epoch milliseconds; the deadlines are compared with it. */
  now?: () => number;
}

interface Entry {
  readonly tunnel: Tunnel;
  /** Armed for the tunnel's deadline: its token's expiry or its session's end. */
  timer: NodeJS.Timeout | undefined;
}

/** The longest a timer may wait (setTimeout's 32-bit limit); a later deadline is waited for in steps. */
const MAX_TIMER_MS = 2_147_483_647;

export class TunnelRegistry {
  readonly #identity: TunnelRegistryOptions['identity'];
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #open = new Map<Tunnel, Entry>();
  readonly #bySession = new Map<string, Set<Tunnel>>();
  readonly #stopListening: Array<() => void>;

  constructor(options: TunnelRegistryOptions) {
    this.#identity = options.identity;
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
    this.#stopListening = [options.sessions.onSessionEnded((sid) => this.#endSession(sid)), options.identity.onChange(() => this.#recheckIdentities())];
  }

  get size(): number {
    return this.#open.size;
  }

  /**
   * Tracks an open tunnel until it ends. `closeOnExpiry`: the route's
   * `closeWebSocketOnExpiry`. Returns the function that forgets it, for a
   * tunnel that closes by itself (either side went away); calling it twice is harmless.
   */
  add(tunnel: Tunnel, closeOnExpiry: boolean): () => void {
    const entry: Entry = { tunnel, timer: undefined };
    this.#open.set(tunnel, entry);
    const { principal } = tunnel;
    if (principal !== null) {
      let tunnels = this.#bySession.get(principal.sid);
      if (tunnels === undefined) this.#bySession.set(principal.sid, (tunnels = new Set()));
      tunnels.add(tunnel);
      // A token never outlives its session, so the earlier deadline is the token's when it counts.
      if (closeOnExpiry) this.#arm(entry, principal.expiresAtMs, 'token expired');
      else this.#arm(entry, principal.sessionEndsAtMs, 'session ended');
    }
    return () => this.#forget(tunnel);
  }

  /** Stops listening and ends every tunnel, public routes' included. */
  close(): void {
    for (const stop of this.#stopListening) stop();
    for (const tunnel of [...this.#open.keys()]) this.#end(tunnel, 'gateway stopping');
  }

  #arm(entry: Entry, deadline: number, reason: TunnelEnd): void {
    const wait = deadline - this.#now();
    if (wait <= 0) {
      this.#end(entry.tunnel, reason);
      return;
    }
    // Re-armed rather than ended when it fires: a deadline beyond the timer's
    // range is reached in steps, and a clock that reads a little behind the
    // timer's never ends a tunnel before its deadline.
    entry.timer = setTimeout(() => this.#arm(entry, deadline, reason), Math.min(wait, MAX_TIMER_MS));
    entry.timer.unref();
  }

  #endSession(sid: string): void {
    const tunnels = this.#bySession.get(sid);
    if (tunnels === undefined) return;
    for (const tunnel of [...tunnels]) this.#end(tunnel, 'session ended');
  }

  /** The users changed: every tunnel whose user or API key is no longer active, or whose route's rule no longer admits it, ends. */
  #recheckIdentities(): void {
    for (const tunnel of [...this.#open.keys()]) {
      const { principal } = tunnel;
      if (principal !== null && !this.#identity.isActive(principal)) this.#end(tunnel, 'user or API key no longer active');
      else if (tunnel.stillAllowed !== undefined && !tunnel.stillAllowed()) this.#end(tunnel, 'access revoked');
    }
  }

  #end(tunnel: Tunnel, reason: TunnelEnd): void {
    if (!this.#forget(tunnel)) return;
    // Why the gateway cut it, once per tunnel (its access line follows when the client side has closed).
    const { principal } = tunnel;
    if (principal !== null && reason !== 'gateway stopping') this.#logger.info({ sid: principal.sid, sub: principal.sub, reason }, 'websocket tunnel ended');
    tunnel.end(reason);
  }

  /** True when the tunnel was still tracked. */
  #forget(tunnel: Tunnel): boolean {
    const entry = this.#open.get(tunnel);
    if (entry === undefined) return false;
    this.#open.delete(tunnel);
    clearTimeout(entry.timer);
    const sid = tunnel.principal?.sid;
    if (sid === undefined) return true;
    const tunnels = this.#bySession.get(sid);
    tunnels?.delete(tunnel);
    if (tunnels?.size === 0) this.#bySession.delete(sid);
    return true;
  }
}
