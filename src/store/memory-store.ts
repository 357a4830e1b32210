// The embedded store: one process, nothing survives a restart. Good for a
// single instance and for tests; a deployment of several instances needs Redis
// (see create-store.ts, which warns when this one is chosen).
import { pino, type Logger } from 'pino';
import { DEFAULT_MAX_SESSIONS_PER_USER, DEFAULT_MEMORY_MAX_REQUESTS, DEFAULT_MEMORY_MAX_SESSIONS } from '../config/defaults.js';
import type { RequestRecord, RequestStatusChange, RevocationListener, SessionRecord, Store, TerminalStatus, TransitionOutcome } from './store.js';
import { LRUCache } from 'lru-cache';
import { Listeners } from './listeners.js';
import { MemorySharedKeys } from './memory-shared-keys.js';

export interface MemoryStoreOptions {
  /** How often expired sessions are dropped; reads hide them in between. */
  sweepIntervalMs?: number;
  /** Where a throwing revocation listener, and an eviction, is reported. */
  logger?: Logger;
  /** Live sessions of one user (by `sub`); a new one past it ends the oldest. */
  maxSessionsPerUser?: number;
  /** Sessions and request records held in all; past it the oldest go (a warning, counted in `evicted`). */
  maxSessions?: number;
  maxRequests?: number;
}

const DEFAULT_SWEEP_INTERVAL_MS = 60_000;

export class MemoryStore implements Store {
  readonly kind = 'memory' as const;
  readonly sharedKeys = new MemorySharedKeys();

  // Maps keep insertion order: the first entry is always the oldest.
  private readonly sessions = new Map<string, SessionRecord>();
  /** sub → its sessions' sids, oldest first. */
  private readonly sessionsByUser = new Map<string, Set<string>>();
  private readonly requests = new Map<string, { record: RequestRecord; expiresAt: number }>();
  /** Provider sessions ended here: sid → until when (epoch ms). Bounded like sessions. */
  private readonly endedProviderSessions = new Map<string, number>();
  /** Back-channel logout tokens seen, by id, until when they are remembered. */
  private readonly logoutTokens = new Map<string, number>();
  /**
   * DPoP proofs' `jti`s seen, until when they are remembered. An LRU bounded
   * like the sessions: a flood of fresh proofs pushes out the oldest, which
   * are the first to leave the acceptance window anyway.
   */
  private readonly dpopProofs: LRUCache<string, number>;
  private readonly oneTimeCodes: LRUCache<string, number>;
  /** DPoP server nonces by epoch, until when they are kept. */
  private readonly dpopNonces = new Map<number, { value: string; untilMs: number }>();
  private readonly maxSessionsPerUser: number;
  private readonly maxSessions: number;
  private readonly maxRequests: number;
  /** Entries dropped because a bound was reached (not by expiry, not by a user's own cap). */
  readonly evicted = { sessions: 0, requests: 0 };
  private readonly statusChanges: Listeners<RequestStatusChange>;
  private readonly logger: Logger;
  private readonly revocations: Listeners<string>;
  private readonly sweepTimer: NodeJS.Timeout;

  constructor(options: MemoryStoreOptions = {}) {
    this.logger = options.logger ?? pino({ enabled: false });
    this.maxSessionsPerUser = options.maxSessionsPerUser ?? DEFAULT_MAX_SESSIONS_PER_USER;
    this.maxSessions = options.maxSessions ?? DEFAULT_MEMORY_MAX_SESSIONS;
    this.maxRequests = options.maxRequests ?? DEFAULT_MEMORY_MAX_REQUESTS;
    this.dpopProofs = new LRUCache<string, number>({ max: this.maxSessions });
    this.oneTimeCodes = new LRUCache<string, number>({ max: this.maxSessions });
    this.revocations = new Listeners<string>('session revocation', this.logger);
    this.statusChanges = new Listeners<RequestStatusChange>('request status', this.logger);
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
    let sids = this.sessionsByUser.get(session.sub);
    if (sids === undefined) {
      sids = new Set();
      this.sessionsByUser.set(session.sub, sids);
    }
    sids.add(session.sid);
    // The user's oldest sessions end, announced as any revocation is.
    for (const oldest of sids) {
      if (sids.size <= this.maxSessionsPerUser) break;
      this.endSession(oldest);
    }
    if (this.sessions.size > this.maxSessions) {
      const oldest = this.sessions.keys().next().value as string;
      this.endSession(oldest);
      this.evicted.sessions += 1;
      this.logger.warn(
        { event: 'store_evicted', kind: 'session', max: this.maxSessions, evicted: this.evicted.sessions },
        'in-memory store full: the oldest session ended',
      );
    }
  }

  async getSession(sid: string): Promise<SessionRecord | null> {
    const session = this.sessions.get(sid);
    if (session === undefined) return null;
    if (isExpired(session)) {
      this.forgetSession(session);
      return null;
    }
    return { ...session };
  }

  async listSessions(sub: string): Promise<SessionRecord[]> {
    const sids = [...(this.sessionsByUser.get(sub) ?? [])];
    const sessions = await Promise.all(sids.map((sid) => this.getSession(sid)));
    return sessions.filter((session): session is SessionRecord => session !== null);
  }

  async revokeSession(sid: string): Promise<boolean> {
    return this.endSession(sid);
  }

  /** Forgets the session; true, and announced, when it was live. */
  private endSession(sid: string): boolean {
    const session = this.sessions.get(sid);
    if (session === undefined) return false;
    this.forgetSession(session);
    if (isExpired(session)) return false;
    this.revocations.emit(sid);
    return true;
  }

  private forgetSession(session: SessionRecord): void {
    this.sessions.delete(session.sid);
    const sids = this.sessionsByUser.get(session.sub);
    sids?.delete(session.sid);
    if (sids?.size === 0) this.sessionsByUser.delete(session.sub);
  }

  /** Live sessions of one user (`sub`), expired ones the sweep has not dropped yet included. */
  sessionCount(sub: string): number {
    return this.sessionsByUser.get(sub)?.size ?? 0;
  }

  onSessionRevoked(listener: RevocationListener): () => void {
    return this.revocations.add(listener);
  }

  /** One process, no feed to interrupt: never called. */
  onRevocationFeedResumed(_listener: () => void): () => void {
    return () => {};
  }

  async createRequest(record: RequestRecord, retentionMs: number): Promise<boolean> {
    if (this.liveRequest(record.id)) return false;
    this.requests.set(record.id, { record: { ...record }, expiresAt: Date.now() + retentionMs });
    if (this.requests.size > this.maxRequests) {
      this.requests.delete(this.requests.keys().next().value as string);
      this.evicted.requests += 1;
      this.logger.warn(
        { event: 'store_evicted', kind: 'request', max: this.maxRequests, evicted: this.evicted.requests },
        'in-memory store full: the oldest request record was dropped',
      );
    }
    return true;
  }

  async getRequest(id: string): Promise<RequestRecord | null> {
    const entry = this.liveRequest(id);
    return entry ? { ...entry.record } : null;
  }

  // One event-loop turn from read to write: atomic in a single process.
  async transitionRequest(id: string, status: TerminalStatus, retentionMs: number, now = Date.now()): Promise<TransitionOutcome> {
    const entry = this.liveRequest(id);
    if (!entry) return 'not_found';
    if (entry.record.status === status) return 'already_applied';
    if (entry.record.status !== 'pending') return 'conflict';
    entry.record = { ...entry.record, status, updatedAt: now };
    entry.expiresAt = now + retentionMs;
    this.statusChanges.emit({ id, status });
    return 'applied';
  }

  onRequestStatusChanged(listener: (change: RequestStatusChange) => void): () => void {
    return this.statusChanges.add(listener);
  }

  async ping(): Promise<void> {}

  async endProviderSession(sid: string, untilMs: number): Promise<void> {
    if (untilMs <= Date.now()) return;
    this.endedProviderSessions.delete(sid);
    this.endedProviderSessions.set(sid, untilMs);
    // The oldest end first; an entry that goes early lets at most one token live out its remaining lifetime.
    if (this.endedProviderSessions.size > this.maxSessions) {
      this.endedProviderSessions.delete(this.endedProviderSessions.keys().next().value as string);
      this.evicted.sessions += 1;
    }
    this.revocations.emit(sid);
  }

  async providerSessionEnded(sid: string): Promise<boolean> {
    const untilMs = this.endedProviderSessions.get(sid);
    return untilMs !== undefined && untilMs > Date.now();
  }

  async rememberLogoutToken(id: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const untilMs = this.logoutTokens.get(id);
    if (untilMs !== undefined && untilMs > now) return false;
    this.logoutTokens.delete(id);
    this.logoutTokens.set(id, now + ttlMs);
    // Bounded like the ended sessions: the oldest goes first (and is too old to be accepted again by then, or nearly).
    if (this.logoutTokens.size > this.maxSessions) this.logoutTokens.delete(this.logoutTokens.keys().next().value as string);
    return true;
  }

  async rememberDpopProof(jti: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    if ((this.dpopProofs.get(jti) ?? 0) > now) return false;
    this.dpopProofs.set(jti, now + ttlMs);
    return true;
  }

  async rememberOneTimeCode(id: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    if ((this.oneTimeCodes.get(id) ?? 0) > now) return false;
    this.oneTimeCodes.set(id, now + ttlMs);
    return true;
  }

  async shareDpopNonce(epoch: number, candidate: string, ttlMs: number): Promise<string> {
    const now = Date.now();
    const held = this.dpopNonces.get(epoch);
    if (held !== undefined && held.untilMs > now) return held.value;
    this.dpopNonces.set(epoch, { value: candidate, untilMs: now + ttlMs });
    // A few epochs at most are ever asked for: the oldest go.
    for (const old of this.dpopNonces.keys()) if (this.dpopNonces.size > 8) this.dpopNonces.delete(old);
    return candidate;
  }

  async close(): Promise<void> {
    clearInterval(this.sweepTimer);
    this.revocations.clear();
    this.statusChanges.clear();
  }

  private liveRequest(id: string): { record: RequestRecord; expiresAt: number } | undefined {
    const entry = this.requests.get(id);
    if (entry && entry.expiresAt <= Date.now()) {
      this.requests.delete(id);
      return undefined;
    }
    return entry;
  }

  private sweepExpired(): void {
    const now = Date.now();
    for (const session of this.sessions.values()) {
      if (session.expiresAt <= now) this.forgetSession(session);
    }
    for (const [sid, untilMs] of this.endedProviderSessions) {
      if (untilMs <= now) this.endedProviderSessions.delete(sid);
    }
    for (const [id, untilMs] of this.logoutTokens) {
      if (untilMs <= now) this.logoutTokens.delete(id);
    }
    for (const [id, entry] of this.requests) {
      if (entry.expiresAt <= now) this.requests.delete(id);
    }
  }
}

function isExpired(session: SessionRecord): boolean {
  return session.expiresAt <= Date.now();
}
