// The shared state of a Gatehouse deployment, behind one interface with two
// implementations: Redis (production; shared by every instance, durable) and
// in-memory (the embedded default; one process only, lost on restart).
//
// Designed for Redis Cluster from the start: every record lives under keys
// that share one hash tag, and no operation touches more than one slot.

/** How a login proved who the user is (the `amr` claim of its tokens). */
export type AuthMethod = 'pwd' | 'api_key';

/** One login: every token issued for it carries its id as `sid`. */
export interface SessionRecord {
  sid: string;
  sub: string;
  username: string;
  method: AuthMethod;
  /** The API key's id when `method` is `api_key`: revoking the key ends the session. */
  apiKeyId?: string;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Epoch milliseconds; the store forgets the session then. */
  expiresAt: number;
}

export type RevocationListener = (sid: string) => void;

export interface Store {
  readonly kind: 'memory' | 'redis';

  /** Records a new session, kept until its `expiresAt`. */
  createSession(session: SessionRecord): Promise<void>;
  /** The session, or null when it never existed, expired or was revoked. */
  getSession(sid: string): Promise<SessionRecord | null>;
  /**
   * Ends a session at once and tells every instance (`onSessionRevoked`).
   * Resolves true when there was an active session to end.
   */
  revokeSession(sid: string): Promise<boolean>;
  /**
   * Called on this and on every other instance sharing the store when a
   * session is revoked; it may be called more than once for one sid. Returns a
   * function that removes the listener.
   */
  onSessionRevoked(listener: RevocationListener): () => void;

  /**
   * Called when the feed of revocations from other instances was interrupted
   * and is flowing again (a Redis reconnect): revocations may have been missed
   * meanwhile, so anything cached on the strength of them must be dropped.
   * Never called by a store that has no such feed (in-memory).
   */
  onRevocationFeedResumed(listener: () => void): () => void;

  /** Resolves when the store answers; rejects otherwise (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
