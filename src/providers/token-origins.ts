// Which provider an opaque token came from. A JWT names its issuer; an opaque
// access or refresh token names nothing, so the gateway remembers, for every
// token set a provider handed out through its login or refresh, whose it is.
// Kept in the store's introspection answers when shared (every instance
// knows), else in a bounded map of this process. Keyed by a digest, so no
// credential is kept; a token never seen here has no origin and is refused
// without a call to any provider.
import { createHash } from 'node:crypto';
import type { IntrospectionStore } from '../store/store.js';
import { storeUnavailable } from '../store/store-unavailable.js';

export interface TokenOriginsOptions {
  store: IntrospectionStore;
  /** Bound of the in-process map when the store keeps no answers. */
  maxEntries: number;
  now?: () => number;
}

export class TokenOrigins {
  readonly #store: IntrospectionStore;
  readonly #maxEntries: number;
  readonly #now: () => number;
  readonly #local = new Map<string, { provider: string; untilMs: number }>();

  constructor(options: TokenOriginsOptions) {
    this.#store = options.store;
    this.#maxEntries = options.maxEntries;
    this.#now = options.now ?? Date.now;
  }

  /** Remembers that `token` is `provider`'s, for `ttlMs`. */
  async remember(token: string, provider: string, ttlMs: number): Promise<void> {
    const digest = originDigest(token);
    const shared = this.#store.introspectionAnswers;
    if (shared !== undefined) {
      await stored(() => shared.set(digest, provider, ttlMs));
      return;
    }
    this.#local.delete(digest);
    this.#local.set(digest, { provider, untilMs: this.#now() + ttlMs });
    if (this.#local.size > this.#maxEntries) this.#local.delete(this.#local.keys().next().value as string);
  }

  /** The name of the provider `token` came from, or undefined when it was never seen (or its time is over). */
  async of(token: string): Promise<string | undefined> {
    const digest = originDigest(token);
    const shared = this.#store.introspectionAnswers;
    if (shared !== undefined) return (await stored(() => shared.get(digest))) ?? undefined;
    const entry = this.#local.get(digest);
    if (entry === undefined) return undefined;
    if (entry.untilMs > this.#now()) return entry.provider;
    this.#local.delete(digest);
    return undefined;
  }
}

/** Not the introspection cache's digest of the same token: the two records never overwrite each other. */
function originDigest(token: string): string {
  return `origin:${createHash('sha256').update(token).digest('base64url')}`;
}

async function stored<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw storeUnavailable(error);
  }
}
