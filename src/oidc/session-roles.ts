// One provider session, one set of roles, whichever of its tokens is shown: the roles of a session are those of the
// newest token the provider issued for it (by `iat`), observed from verified access tokens and from introspection
// answers that carry the roles claim.
//
// Invariants: the newest observation wins (two of the same second: only the roles both name); every token of the
// session is held to it; kept in the shared store when there is one (under a digest of the session id) and always
// in a bounded map here, which route rules read synchronously.
// Why: docs/decisions/0018-provider-mode-login-and-roles.md
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { IntrospectionStore } from '../store/store.js';

/** One observation of a session's roles. */
interface Seen {
  sub: string;
  roles: readonly string[];
  /** When the provider issued the token that carried them (epoch ms). */
  issuedAtMs: number;
}

export interface SessionRolesOptions {
  store: IntrospectionStore;
  /** How many sessions this process remembers. */
  maxEntries: number;
  /** How long a session's roles are kept: the longest one of its tokens can live (the refresh-token lifetime). */
  keepMs: number;
}

export class SessionRoles {
  readonly #options: SessionRolesOptions;
  readonly #memory: LRUCache<string, Seen>;

  constructor(options: SessionRolesOptions) {
    this.#options = options;
    this.#memory = new LRUCache<string, Seen>({ max: options.maxEntries, ttl: options.keepMs });
  }

  /**
   * The session's roles after this token: its own when it is the newest seen
   * (then kept as the session's), the newest seen otherwise. `observed`
   * undefined: the token says nothing about roles (an introspection answer
   * without the claim); then the session's, or `fallback` when none is known.
   */
  async settle(sid: string, sub: string, observed: Omit<Seen, 'sub'> | undefined, fallback: readonly string[] = []): Promise<readonly string[]> {
    const known = newest(this.#memory.get(sid), await this.#read(sid));
    const mine = known !== undefined && known.sub !== sub ? undefined : known;
    if (observed !== undefined && (mine === undefined || observed.issuedAtMs >= mine.issuedAtMs)) {
      // `iat` counts seconds: two tokens of one second (a login and a refresh at once) cannot be told apart
      // by age, so the session holds only the roles both name, whichever is seen first.
      const roles = mine !== undefined && mine.issuedAtMs === observed.issuedAtMs ? observed.roles.filter((role) => mine.roles.includes(role)) : observed.roles;
      const seen = { sub, roles, issuedAtMs: observed.issuedAtMs };
      this.#memory.set(sid, seen);
      await this.#write(sid, seen);
      return seen.roles;
    }
    if (mine === undefined) return fallback;
    this.#memory.set(sid, mine);
    return mine.roles;
  }

  /** The session's roles as this process last saw them; undefined when it knows none (for another subject, none). */
  current(sid: string, sub: string): readonly string[] | undefined {
    const seen = this.#memory.get(sid);
    return seen !== undefined && seen.sub === sub ? seen.roles : undefined;
  }

  async #read(sid: string): Promise<Seen | undefined> {
    const text = await this.#options.store.introspectionAnswers?.get(storeKey(sid));
    if (text === null || text === undefined) return undefined;
    try {
      const value = JSON.parse(text) as Seen;
      return typeof value.sub === 'string' && Array.isArray(value.roles) && typeof value.issuedAtMs === 'number' ? value : undefined;
    } catch {
      return undefined;
    }
  }

  async #write(sid: string, seen: Seen): Promise<void> {
    await this.#options.store.introspectionAnswers?.set(storeKey(sid), JSON.stringify(seen), this.#options.keepMs);
  }
}

function newest(a: Seen | undefined, b: Seen | undefined): Seen | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return b.issuedAtMs > a.issuedAtMs ? b : a;
}

/** A digest, as the introspection answers' keys are, and distinct from any token's digest by its prefix. */
function storeKey(sid: string): string {
  return createHash('sha256').update(`session-roles\0${sid}`).digest('base64url');
}
