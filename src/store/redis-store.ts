// The production store, shared by every instance and surviving their restarts: records are hashes (redis-records.ts)
// changed by scripts (redis-scripts.ts), announcements go over pub/sub (redis-announcements.ts), keys and channels
// are named by keyspace.ts; rate limiters, API keys and introspection answers share its command connection.
//
// Invariants: whatever goes wrong inside ioredis leaves this file as one `store_unavailable` whose Retry-After is
// the time to the next reconnect; no operation waits longer than `operationTimeoutMs`; nothing outside store/ holds
// the connection.
// Why: docs/decisions/0015-the-redis-store-boundary.md
import { pino, type Logger } from 'pino';
import { DEFAULT_MAX_SESSIONS_PER_USER } from '../config/defaults.js';
import type { GatehouseError } from '../core/errors.js';
import { Keyspace } from './keyspace.js';
import { redisRateLimiters, type RateLimiterBackend } from './rate-limiters.js';
import { AnnouncementFeed } from './redis-announcements.js';
import { RedisApiKeys } from './redis-api-keys.js';
import { RedisAuditTrail } from './redis-audit-trail.js';
import { duplicateForSubscribing, duplicateForWriting, type RedisClient } from './redis-client.js';
import { withinDeadline } from '../core/deadline.js';
import { answersAsWritableMaster, quitOrDisconnect, reportConnectionHealth, withoutCredentials } from './redis-connection.js';
import { EvictionWatch, type MasterEvictionPolicy } from './eviction-policy.js';
import { readRecordHash } from './redis-hash-read.js';
import { RedisFirstWriters } from './redis-first-writers.js';
import { RedisIntrospectionAnswers } from './redis-introspection.js';
import { RedisQuotaCounters } from './redis-quota-counters.js';
import { RedisSharedKeys } from './redis-shared-keys.js';
import { RedisUserRecords } from './redis-user-records.js';
import { decimal, requestFields, requestFromHash, retentionPx, sessionFields, sessionFromHash, type Hash } from './redis-records.js';
import { ReplicaConfirmation } from './redis-replication.js';
import { defineStoreScripts, type StoreScripts } from './redis-scripts.js';
import { ReconnectSchedule } from './reconnect-schedule.js';
import { storeUnavailable, UnconfirmedWrite } from './store-unavailable.js';
import type { RequestRecord, RequestStatusChange, RevocationListener, SessionRecord, Store, TerminalStatus, TransitionOutcome } from './store.js';

export interface RedisStoreOptions {
  /** Put in front of every key and of the channels, so deployments can share a Redis. */
  keyPrefix: string;
  logger?: Logger;
  /** The longest any operation may take before it fails as `store_unavailable`. */
  operationTimeoutMs?: number;
  /** The schedule the client's retry strategy keeps (see createRedisClient): the Retry-After of a failure. */
  reconnects?: ReconnectSchedule;
  /** Live sessions of one user (by `sub`); a new one past it ends the oldest. */
  maxSessionsPerUser?: number;
  /** Replicas that must hold a request record or transition before it counts as written (redis-replication.ts); Sentinel and Cluster: 1. */
  replicasToConfirm?: number;
}

/** Above the client's own 2 s command timeout: a last guard, not the usual path. */
const DEFAULT_OPERATION_TIMEOUT_MS = 2_500;

export class RedisStore implements Store {
  readonly kind = 'redis' as const;

  private readonly client: RedisClient;
  private readonly subscriber: RedisClient;
  private readonly scripts: StoreScripts;
  private readonly feed: AnnouncementFeed;
  /** The replay memory (DPoP proofs, one-time codes): a turn's keys in one call. */
  private readonly firstWriters: RedisFirstWriters;
  private readonly keys: Keyspace;
  private readonly logger: Logger;
  private readonly operationTimeoutMs: number;
  private readonly reconnects: ReconnectSchedule;
  private readonly maxSessionsPerUser: number;
  /** Absent: writes count as made once the master has them. */
  private readonly replication: ReplicaConfirmation | undefined;
  /** Request records and transitions go over `writer` (`client` unless they are confirmed) with its scripts. */
  private readonly writer: RedisClient;
  private readonly writerScripts: StoreScripts;
  private closed = false;
  /** Each master's maxmemory-policy, read at every (re)connection. */
  readonly eviction: EvictionWatch;

  readonly rateLimiters: RateLimiterBackend;
  readonly quotaCounters: RedisQuotaCounters;
  readonly apiKeys: RedisApiKeys;
  readonly introspectionAnswers: RedisIntrospectionAnswers;
  readonly sharedKeys: RedisSharedKeys;
  readonly users: RedisUserRecords;
  readonly auditTrail: RedisAuditTrail;

  /** Takes ownership of `client`: `close()` quits it. */
  constructor(client: RedisClient, options: RedisStoreOptions) {
    this.client = client;
    this.scripts = defineStoreScripts(client);
    this.keys = new Keyspace(options.keyPrefix);
    this.logger = options.logger ?? pino({ enabled: false });
    this.operationTimeoutMs = options.operationTimeoutMs ?? DEFAULT_OPERATION_TIMEOUT_MS;
    this.reconnects = options.reconnects ?? new ReconnectSchedule();
    this.maxSessionsPerUser = options.maxSessionsPerUser ?? DEFAULT_MAX_SESSIONS_PER_USER;
    const replicas = options.replicasToConfirm ?? 0;
    // WAIT holds the connection it is sent on (up to 500 ms): confirmed writes get their own, so reads never queue behind it.
    this.writer = replicas > 0 ? duplicateForWriting(client) : client;
    this.writerScripts = replicas > 0 ? defineStoreScripts(this.writer) : this.scripts;
    this.replication = replicas > 0 ? new ReplicaConfirmation(this.writer, replicas, this.logger) : undefined;
    this.rateLimiters = redisRateLimiters(client, this.keys);
    this.firstWriters = new RedisFirstWriters(client, (operation) => this.run(operation));
    this.quotaCounters = new RedisQuotaCounters(client, this.keys, (operation) => this.run(operation));
    this.apiKeys = new RedisApiKeys(client, this.keys);
    this.introspectionAnswers = new RedisIntrospectionAnswers(client, this.keys);
    this.auditTrail = new RedisAuditTrail(client, this.keys);

    this.subscriber = duplicateForSubscribing(client);
    const closed = () => this.closed;
    reportConnectionHealth(this.client, 'commands', this.logger, closed);
    reportConnectionHealth(this.subscriber, 'subscriber', this.logger, closed);
    if (this.writer !== client) reportConnectionHealth(this.writer, 'writes', this.logger, closed);
    this.eviction = new EvictionWatch(client, this.logger);
    this.feed = new AnnouncementFeed(this.subscriber, { keys: this.keys, logger: this.logger });
    this.sharedKeys = new RedisSharedKeys(client, this.keys, this.feed);
    this.users = new RedisUserRecords(client, this.keys, this.scripts, this.feed);
  }

  /**
   * Resolves once revocations and request status changes announced by other
   * instances reach this one (never rejects). Until then (Redis down at
   * start) they are missed: `createStore` waits for this, for a bounded time.
   */
  listening(): Promise<void> {
    return this.feed.subscribed;
  }

  async createSession(session: SessionRecord): Promise<void> {
    // Already over: nothing to keep, and PEXPIREAT would delete it at once.
    if (session.expiresAt <= Date.now()) return;
    const fields = sessionFields(session);
    // Counted first: a session written but never counted would escape the
    // cap, while a sid counted but never written is only a place taken
    // until it is the oldest.
    const oldest = await this.run(() => this.scripts.trackUserSession(this.keys.userSessions(session.sub), session, this.maxSessionsPerUser));
    await this.run(() => this.scripts.createSession(this.keys.session(session.sid), Math.ceil(session.expiresAt), fields));
    for (const sid of oldest) await this.revokeSession(sid);
  }

  async getSession(sid: string): Promise<SessionRecord | null> {
    const hash = await this.readHash(this.keys.session(sid));
    if (hash === null) return null;
    const session = sessionFromHash(sid, hash);
    if (session === undefined) {
      // Not something this code wrote. Treating it as absent fails closed
      // (the user logs in again) instead of failing every request.
      this.logger.warn({ sid }, 'ignoring an unreadable session record');
      return null;
    }
    // Redis expires by its own clock; this keeps a skewed one from granting
    // extra life, exactly like the memory store.
    return session.expiresAt > Date.now() ? session : null;
  }

  async listSessions(sub: string): Promise<SessionRecord[]> {
    // The user's set is ordered by creation and may still name sessions that ended: those read as null.
    const sids = await this.run(() => this.client.zrange(this.keys.userSessions(sub), 0, -1));
    const sessions = await Promise.all(sids.map((sid) => this.getSession(sid)));
    return sessions.filter((session): session is SessionRecord => session !== null && session.sub === sub);
  }

  async revokeSession(sid: string): Promise<boolean> {
    const revoked = await this.run(() => this.scripts.revokeSession(this.keys.session(sid), Date.now(), this.feed.revocationChannel, sid));
    if (!revoked) return false;
    // Our own subscriber will hear the announcement too, a moment later; the
    // caller must not wait for that round trip. Listeners must take a repeated
    // sid calmly, so the echo is harmless.
    this.feed.revocations.emit(sid);
    return true;
  }

  async endProviderSession(sid: string, untilMs: number): Promise<void> {
    const ttlMs = Math.ceil(untilMs - Date.now());
    if (ttlMs <= 0) return;
    await this.run(() => this.client.set(this.keys.endedProviderSession(sid), '1', 'PX', ttlMs));
    // Written before it is announced: an instance that hears of it and checks finds it.
    await this.run(() => this.client.publish(this.feed.revocationChannel, sid));
    this.feed.revocations.emit(sid);
  }

  async providerSessionEnded(sid: string): Promise<boolean> {
    return (await this.run(() => this.client.exists(this.keys.endedProviderSession(sid)))) === 1;
  }

  // Remembered by SET NX (redis-first-writers.ts): the first writer wins, and every instance refuses what another one accepted.
  rememberLogoutToken(id: string, ttlMs: number): Promise<boolean> {
    return this.firstWriters.claim(this.keys.logoutToken(id), ttlMs);
  }

  rememberDpopProof(jti: string, ttlMs: number): Promise<boolean> {
    return this.firstWriters.claim(this.keys.dpopProof(jti), ttlMs);
  }

  rememberOneTimeCode(id: string, ttlMs: number): Promise<boolean> {
    return this.firstWriters.claim(this.keys.oneTimeCode(id), ttlMs);
  }

  async shareDpopNonce(epoch: number, candidate: string, ttlMs: number): Promise<string> {
    const key = this.keys.dpopNonce(epoch);
    // The first writer's value wins; everyone, the writer included, reads the winner's.
    await this.run(() => this.client.set(key, candidate, 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX'));
    return (await this.run(() => this.client.get(key))) ?? candidate;
  }

  onSessionRevoked(listener: RevocationListener): () => void {
    return this.feed.revocations.add(listener);
  }

  onRevocationFeedResumed(listener: () => void): () => void {
    return this.feed.resumed.add(listener);
  }

  revocationFeedInterrupted(): boolean {
    return this.feed.interrupted;
  }

  async createRequest(record: RequestRecord, retentionMs: number): Promise<boolean> {
    const ttlMs = retentionPx(retentionMs);
    const fields = requestFields(record);
    return this.run(async () => {
      const created = await this.writerScripts.createRequest(this.keys.request(record.id), ttlMs, fields);
      // Also when the record was there already: that earlier write may not have reached a replica either.
      await this.replication?.confirm(this.keys.request(record.id));
      return created;
    });
  }

  async getRequest(id: string): Promise<RequestRecord | null> {
    const hash = await this.readHash(this.keys.request(id));
    if (hash === null) return null;
    const record = requestFromHash(id, hash);
    if (record === undefined) {
      // Not something this code wrote: absent, rather than failing every status query.
      this.logger.warn({ requestId: id }, 'ignoring an unreadable request record');
      return null;
    }
    return record;
  }

  async transitionRequest(id: string, status: TerminalStatus, retentionMs: number, now = Date.now()): Promise<TransitionOutcome> {
    const ttlMs = retentionPx(retentionMs);
    const change: RequestStatusChange = { id, status };
    const updatedAt = decimal(now, 'now');
    const reply = await this.run(() =>
      this.writerScripts.transitionRequest(
        this.keys.request(id),
        { status, updatedAt, retentionMs: ttlMs },
        { channel: this.feed.statusChannel, message: JSON.stringify(change) },
      ),
    );
    // As with revocations: our own subscriber hears the echo later, and listeners take a repeated change calmly.
    if (reply === 'applied') this.feed.statusChanges.emit(change);
    if (reply === 'applied' || reply === 'already_applied') {
      // As for a new record: a report counts as kept once a replica holds it
      // (also a repeat: the first may not have reached one). Unconfirmed, the
      // caller learns what the master did and may keep it elsewhere (the
      // request tracker's journal) or answer that it is not kept.
      const replication = this.replication;
      if (replication)
        await this.run(() => replication.confirm(this.keys.request(id)).catch((error: unknown) => Promise.reject(new UnconfirmedWrite(reply, error))));
      return reply;
    }
    if (reply !== 'unreadable') return reply;
    // Not something this code wrote: as getRequest does, treat it as absent.
    this.logger.warn({ requestId: id }, 'ignoring an unreadable request record');
    return 'not_found';
  }

  onRequestStatusChanged(listener: (change: RequestStatusChange) => void): () => void {
    return this.feed.statusChanges.add(listener);
  }

  /** Resolves only when a writable master answers (see answersAsWritableMaster). */
  async ping(): Promise<void> {
    await this.run(() => answersAsWritableMaster(this.client));
  }

  evictionPolicies(): readonly MasterEvictionPolicy[] {
    return this.eviction.latest;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.feed.close();
    const writer = this.writer === this.client ? [] : [quitOrDisconnect(this.writer)];
    await Promise.all([quitOrDisconnect(this.subscriber), quitOrDisconnect(this.client), ...writer]);
  }

  private readHash(key: string): Promise<Hash | null> {
    return this.run(() => readRecordHash(this.client, key));
  }

  private async run<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await withinDeadline(operation(), this.operationTimeoutMs);
    } catch (error) {
      throw this.unavailable(error);
    }
  }

  private unavailable(error: unknown): GatehouseError {
    return storeUnavailable(withoutCredentials(error), this.reconnects.msUntilNextAttempt());
  }
}
