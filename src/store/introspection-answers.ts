// The store's half of the introspection cache (oidc/introspection-cache.ts):
// a provider's answers about tokens, shared by every instance, each kept for
// as long as it may be trusted. Keyed by a digest of the token, so the store
// never holds a credential; the answer is kept as the text it is given.

export interface IntrospectionAnswers {
  /** The answer kept for the token of this digest, or null when none is (any more). */
  get(tokenDigest: string): Promise<string | null>;
  /** Keeps the answer for `ttlMs` (rounded up to whole milliseconds). */
  set(tokenDigest: string, answer: string, ttlMs: number): Promise<void>;
}
