// Refresh tokens used as bearer tokens (spec 5.9) are opaque, or signed with a
// secret only the provider holds, so only the provider's introspection
// endpoint (RFC 7662) can say whether one is alive. Asking on every request
// would make the provider part of the hot path; this cache keeps the answer
// in the shared store (Redis when configured) so one token is introspected at
// most once per interval across all instances, and never past its expiry.
// Only a digest of the token is ever handed to the store: the store never
// holds a credential.
import { createHash } from 'node:crypto';
import type { IntrospectionStore } from '../store/store.js';
import { stringList } from './access-token-verifier.js';

/** What is kept of an introspection answer: enough to admit the bearer, nothing more. */
export interface IntrospectedToken {
  active: boolean;
  sub?: string;
  username?: string;
  /** Absent when the answer has no roles claim (most providers leave it out: session-roles.ts fills it in). */
  roles?: string[];
  groups?: string[];
  /** Epoch seconds (RFC 7662 `exp`). */
  exp?: number;
  /** Epoch seconds (RFC 7662 `iat`): when the provider issued the token. */
  iat?: number;
  /** The provider's session id (`claims.session`), when it names one. */
  session?: string;
  scope?: string;
}

export interface IntrospectionCacheOptions {
  /** Its introspection answers are shared by every instance (Redis); without them, answers are kept in memory. */
  store: IntrospectionStore;
  /** The longest an answer is trusted before the provider is asked again (a revocation there is seen within it). */
  intervalMs: number;
  /** Bound of the in-memory cache (used when the store is in memory). */
  maxEntries: number;
  introspect: (token: string) => Promise<IntrospectedToken>;
  now?: () => number;
}

interface Entry {
  value: IntrospectedToken;
  untilMs: number;
}

export class IntrospectionCache {
  readonly #options: IntrospectionCacheOptions;
  readonly #now: () => number;
  readonly #memory = new Map<string, Entry>();
  /** One introspection per token at a time on this instance. */
  readonly #inFlight = new Map<string, Promise<IntrospectedToken>>();

  constructor(options: IntrospectionCacheOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  async lookup(token: string): Promise<IntrospectedToken> {
    const key = createHash('sha256').update(token).digest('base64url');
    const cached = await this.#read(key);
    if (cached) return cached;
    const pending = this.#inFlight.get(key);
    if (pending) return pending;
    const fresh = this.#introspectAndKeep(key, token).finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, fresh);
    return fresh;
  }

  async #introspectAndKeep(key: string, token: string): Promise<IntrospectedToken> {
    const value = await this.#options.introspect(token);
    const now = this.#now();
    // Until the token expires, and no longer than the interval; an inactive answer is kept the
    // interval too, so a flood of bad tokens does not reach the provider.
    const lifeMs = value.active && value.exp !== undefined ? value.exp * 1000 - now : this.#options.intervalMs;
    const ttlMs = Math.min(this.#options.intervalMs, lifeMs);
    if (ttlMs > 0) await this.#write(key, value, ttlMs);
    return value;
  }

  async #read(key: string): Promise<IntrospectedToken | null> {
    const shared = this.#options.store.introspectionAnswers;
    if (shared) {
      const text = await shared.get(key);
      return text === null ? null : (JSON.parse(text) as IntrospectedToken);
    }
    const entry = this.#memory.get(key);
    if (!entry) return null;
    if (entry.untilMs <= this.#now()) {
      this.#memory.delete(key);
      return null;
    }
    return entry.value;
  }

  async #write(key: string, value: IntrospectedToken, ttlMs: number): Promise<void> {
    const shared = this.#options.store.introspectionAnswers;
    if (shared) {
      await shared.set(key, JSON.stringify(value), ttlMs);
      return;
    }
    // Bounded: the oldest answer goes first (a Map iterates in insertion order).
    if (this.#memory.size >= this.#options.maxEntries) this.#memory.delete(this.#memory.keys().next().value!);
    this.#memory.set(key, { value, untilMs: this.#now() + ttlMs });
  }
}

/** The provider's introspection answer in the configured claims' words (null: not active). */
export function fromIntrospection(
  answer: Record<string, unknown> | null,
  claims: { username: string; roles: string; groups: string; session?: string },
): IntrospectedToken {
  if (!answer || answer.active !== true || typeof answer.sub !== 'string') return { active: false };
  const username = answer[claims.username] ?? answer.username;
  return {
    active: true,
    sub: answer.sub,
    username: typeof username === 'string' ? username : answer.sub,
    ...(answer[claims.roles] !== undefined && { roles: stringList(answer[claims.roles]) }),
    groups: stringList(answer[claims.groups]),
    ...(typeof answer.exp === 'number' && { exp: answer.exp }),
    ...(typeof answer.iat === 'number' && { iat: answer.iat }),
    ...(claims.session !== undefined && typeof answer[claims.session] === 'string' && { session: answer[claims.session] as string }),
    ...(typeof answer.scope === 'string' && { scope: answer.scope }),
  };
}
