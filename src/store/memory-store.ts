// The embedded store: one process, nothing survives a restart. Good for a
// single instance and for tests; a deployment of several instances needs Redis
// (see create-store.ts, which warns when this one is chosen).
import { pino, type Logger } from 'pino';
import type { RevocationListener, SessionRecord, Store } from './store.js';
import { Listeners } from './listeners.js';

export interface MemoryStoreOptions {
  /** How often expired sessions are dropped; reads hide them in between. */
  sweepIntervalMs?: number;
  /** Where a throwing revocation listener is reported. */
  logger?: Logger;
}

const DEFAULT_SWEEP_INTERVAL_MS = 60_000;

export class MemoryStore implements Store {
  readonly kind = 'memory' as const;

  private readonly sessions = new Map<string, SessionRecord>();
  private readonly logger: Logger;
  private readonly revocations: Listeners<string>;
  private readonly sweepTimer: NodeJS.Timeout;

  constructor(options: MemoryStoreOptions = {}) {
    this.logger = options.logger ?? pino({ enabled: false });
    this.revocations = new Listeners<string>('session revocation', this.logger);
    // Without the sweep, sessions that are never read again (the common case:
    // a user simply stops coming back) would stay in memory for ever.
    this.sweepTimer = setInterval(() => this.sweepExpired(), options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS);
    // The sweep is housekeeping; it must not keep a finished process alive.
    this.sweepTimer.unref();
  }

  /** Entries held, including expired ones the next sweep will drop. */
  get size(): number {
    return this.sessions.size;
  }

  async createSession(session: SessionRecord): Promise<void> {
    if (isExpired(session)) return;
    // A copy, so a caller mutating its object cannot change what is stored
    // (the Redis store behaves the same way through its JSON round trip).
    this.sessions.set(session.sid, { ...session });
  }

  async getSession(sid: string): Promise<SessionRecord | null> {
    const session = this.sessions.get(sid);
    if (session === undefined) return null;
    if (isExpired(session)) {
      this.sessions.delete(sid);
      return null;
    }
    return { ...session };
  }

  async revokeSession(sid: string): Promise<boolean> {
    const session = this.sessions.get(sid);
    if (session === undefined) return false;
    this.sessions.delete(sid);
    if (isExpired(session)) return false;
    this.revocations.emit(sid);
    return true;
  }

  onSessionRevoked(listener: RevocationListener): () => void {
    return this.revocations.add(listener);
  }

  /** One process, no feed to interrupt: never called. */
  onRevocationFeedResumed(_listener: () => void): () => void {
    return () => {};
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    clearInterval(this.sweepTimer);
    this.revocations.clear();
  }


  private sweepExpired(): void {
    const now = Date.now();
    for (const [sid, session] of this.sessions) {
      if (session.expiresAt <= now) this.sessions.delete(sid);
    }
  }
}

function isExpired(session: SessionRecord): boolean {
  return session.expiresAt <= Date.now();
}
