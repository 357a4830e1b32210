// The production store: every instance of a deployment shares it, and it
// survives their restarts. Records are Redis hashes (redis-records.ts),
// changed by scripts (redis-scripts.ts); announcements travel over pub/sub
// on a connection of their own (redis-announcements.ts).
//
// The boundary rule: whatever goes wrong inside ioredis (refused connection,
// timeout, reply error) leaves this file as one `store_unavailable` error,
// whose Retry-After is the time until the client's next reconnect attempt,
// and no operation waits longer than `operationTimeoutMs`. Callers answer
// 503 and never see, or hang on, Redis itself.
import type { Redis } from 'ioredis';
import { pino, type Logger } from 'pino';
import { DEFAULT_MAX_SESSIONS_PER_USER } from '../config/defaults.js';
import type { GatehouseError } from '../core/errors.js';
import { AnnouncementFeed } from './redis-announcements.js';
import { duplicateForSubscribing, type RedisClient } from './redis-client.js';
import { quitOrDisconnect, reportConnectionHealth, withinDeadline, withoutCredentials } from './redis-connection.js';
import { decimal, requestFields, requestFromHash, sessionFields, sessionFromHash, type Hash } from './redis-records.js';
import { defineStoreScripts, type StoreScripts } from './redis-scripts.js';
import { ReconnectSchedule } from './reconnect-schedule.js';
import { storeUnavailable } from './store-unavailable.js';
import type {
  RequestRecord,
  RequestStatusChange,
  RevocationListener,
  SessionRecord,
  Store,
  TerminalStatus,
  TransitionOutcome,
} from './store.js';

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
  /**
   * Replicas that must hold a new request record before it counts as
   * written (`WAIT`). With Sentinel, 1: a master being replaced still takes
   * writes that its successor never sees; unconfirmed, the record goes back
   * to the outbox and is written again, to whichever node is master by then.
   */
  replicasToConfirm?: number;
}

/** How long a record's write waits for a replica before it is retried instead. */
const REPLICA_CONFIRM_TIMEOUT_MS = 500;

/** How often a master's replicas are counted again (ROLE) while it has none, or before a WAIT trusted to find one. */
const ALONE_RECHECK_MS = 1_000;

/** Longer than a manual failover keeps the old master alone before demoting it. */
const ALONE_GRACE_MS = 5_000;

/** A master without replicas is worth one warning line per this interval, not one per record. */
const UNREPLICATED_WARNING_INTERVAL_MS = 60_000;

/** Above the client's own 2 s command timeout: a last guard, not the usual path. */
const DEFAULT_OPERATION_TIMEOUT_MS = 2_500;

export class RedisStore implements Store {
  readonly kind = 'redis' as const;

  private readonly client: RedisClient;
  private readonly subscriber: RedisClient;
  private readonly scripts: StoreScripts;
  private readonly feed: AnnouncementFeed;
  private readonly keyPrefix: string;
  private readonly logger: Logger;
  private readonly operationTimeoutMs: number;
  private readonly reconnects: ReconnectSchedule;
  private readonly maxSessionsPerUser: number;
  private readonly replicasToConfirm: number;
  private lastUnreplicatedWarning = -Infinity;
  /** Since when ROLE has said, at every ask, that the master has no replica attached (a crash failover's survivor); Infinity: it has one. */
  private aloneSince = Infinity;
  private aloneCheckedAt = -Infinity;
  private closed = false;

  /** Takes ownership of `client`: `close()` quits it. */
  constructor(client: RedisClient, options: RedisStoreOptions) {
    this.client = client;
    this.scripts = defineStoreScripts(client);
    this.keyPrefix = options.keyPrefix;
    this.logger = options.logger ?? pino({ enabled: false });
    this.operationTimeoutMs = options.operationTimeoutMs ?? DEFAULT_OPERATION_TIMEOUT_MS;
    this.reconnects = options.reconnects ?? new ReconnectSchedule();
    this.maxSessionsPerUser = options.maxSessionsPerUser ?? DEFAULT_MAX_SESSIONS_PER_USER;
    this.replicasToConfirm = options.replicasToConfirm ?? 0;

    this.subscriber = duplicateForSubscribing(client);
    const closed = () => this.closed;
    reportConnectionHealth(this.client, 'commands', this.logger, closed);
    reportConnectionHealth(this.subscriber, 'subscriber', this.logger, closed);
    this.feed = new AnnouncementFeed(this.subscriber, { keyPrefix: options.keyPrefix, logger: this.logger });
  }

  get redisClient(): RedisClient {
    return this.client;
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
    const oldest = await this.run(() => this.scripts.trackUserSession(this.userSessionsKey(session.sub), session, this.maxSessionsPerUser));
    await this.run(() => this.scripts.createSession(this.sessionKey(session.sid), Math.ceil(session.expiresAt), fields));
    for (const sid of oldest) await this.revokeSession(sid);
  }

  async getSession(sid: string): Promise<SessionRecord | null> {
    const hash = await this.readHash(this.sessionKey(sid));
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
    const sids = await this.run(() => this.client.zrange(this.userSessionsKey(sub), 0, -1));
    const sessions = await Promise.all(sids.map((sid) => this.getSession(sid)));
    return sessions.filter((session): session is SessionRecord => session !== null && session.sub === sub);
  }

  async revokeSession(sid: string): Promise<boolean> {
    const revoked = await this.run(() =>
      this.scripts.revokeSession(this.sessionKey(sid), Date.now(), this.feed.revocationChannel, sid),
    );
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
    await this.run(() => this.client.set(this.endedProviderSessionKey(sid), '1', 'PX', ttlMs));
    // Written before it is announced: an instance that hears of it and checks finds it.
    await this.run(() => this.client.publish(this.feed.revocationChannel, sid));
    this.feed.revocations.emit(sid);
  }

  async providerSessionEnded(sid: string): Promise<boolean> {
    return (await this.run(() => this.client.exists(this.endedProviderSessionKey(sid)))) === 1;
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
      const created = await this.scripts.createRequest(this.requestKey(record.id), ttlMs, fields);
      // Also when the record was there already: that earlier write may not have reached a replica either.
      if (this.replicasToConfirm > 0) await this.confirmReplicated();
      return created;
    });
  }

  /**
   * A record counts as written once a replica holds it too, so that a
   * failover (manual or a crash) cannot lose it. A master with no replica
   * attached at all, the one a crash failover leaves behind until the old
   * master comes back as its replica, has nothing to wait for: its writes are
   * taken as they are (a second crash before a replica attaches could lose
   * them; asynchronous replication can do no better), and a warning says so,
   * rather than every record sitting in the outbox until a replica appears.
   */
  private async confirmReplicated(): Promise<void> {
    const client = this.client as Redis;
    // Known to be alone (checked within the last second): waiting for a replica would only time out.
    if (await this.masterIsAlone(false)) return this.writtenUnreplicated();
    const replicas = await client.wait(this.replicasToConfirm, REPLICA_CONFIRM_TIMEOUT_MS);
    if (replicas >= this.replicasToConfirm) return;
    if (await this.masterIsAlone(true)) return this.writtenUnreplicated();
    throw new Error(`the record reached ${replicas} of ${this.replicasToConfirm} replicas within ${REPLICA_CONFIRM_TIMEOUT_MS} ms`);
  }

  /**
   * Whether the node written to has been a master with no replica attached
   * for ALONE_GRACE_MS, from ROLE (asked at most once a second unless
   * `fresh`). The grace tells a crash failover's survivor, alone until the
   * old master comes back, from a master whose replica is just being promoted
   * in a manual failover: that one is alone for the moment before it is
   * demoted, and what it takes then is discarded when it resyncs as a replica.
   */
  private async masterIsAlone(fresh: boolean): Promise<boolean> {
    const now = Date.now();
    if (fresh || now - this.aloneCheckedAt >= ALONE_RECHECK_MS) {
      const role = (await (this.client as Redis).call('ROLE')) as [string, number, unknown[]?];
      const alone = role[0] === 'master' && (role[2]?.length ?? 0) === 0;
      this.aloneSince = alone ? Math.min(this.aloneSince, now) : Infinity;
      this.aloneCheckedAt = now;
    }
    return now - this.aloneSince >= ALONE_GRACE_MS;
  }

  private writtenUnreplicated(): void {
    const now = Date.now();
    if (now - this.lastUnreplicatedWarning < UNREPLICATED_WARNING_INTERVAL_MS) return;
    this.lastUnreplicatedWarning = now;
    this.logger.warn({ event: 'records_unreplicated' }, 'the Redis master has no replica: request records are written to it alone until one attaches');
  }

  async getRequest(id: string): Promise<RequestRecord | null> {
    const hash = await this.readHash(this.requestKey(id));
    if (hash === null) return null;
    const record = requestFromHash(id, hash);
    if (record === undefined) {
      // Not something this code wrote: absent, rather than failing every status query.
      this.logger.warn({ requestId: id }, 'ignoring an unreadable request record');
      return null;
    }
    return record;
  }

  async transitionRequest(
    id: string,
    status: TerminalStatus,
    retentionMs: number,
    now = Date.now(),
  ): Promise<TransitionOutcome> {
    const ttlMs = retentionPx(retentionMs);
    const change: RequestStatusChange = { id, status };
    const updatedAt = decimal(now, 'now');
    const reply = await this.run(() =>
      this.scripts.transitionRequest(
        this.requestKey(id),
        { status, updatedAt, retentionMs: ttlMs },
        { channel: this.feed.statusChannel, message: JSON.stringify(change) },
      ),
    );
    switch (reply) {
      case 'applied':
        // As with revocations: our own subscriber hears the echo later, and
        // listeners take a repeated change calmly.
        this.feed.statusChanges.emit(change);
        return 'applied';
      case 'unreadable':
        // Not something this code wrote: as getRequest does, treat it as absent.
        this.logger.warn({ requestId: id }, 'ignoring an unreadable request record');
        return 'not_found';
      default:
        return reply;
    }
  }

  onRequestStatusChanged(listener: (change: RequestStatusChange) => void): () => void {
    return this.feed.statusChanges.add(listener);
  }

  /**
   * Resolves only when a writable master answers: during a failover the old
   * master still answers PING (and even takes writes, which are lost when it
   * is demoted), so readiness asks for its role, and a Cluster for its state
   * (every slot served).
   */
  async ping(): Promise<void> {
    await this.run(async () => {
      if (this.client.isCluster) {
        const info = String(await this.client.cluster('INFO'));
        if (!info.includes('cluster_state:ok')) throw new Error('the Redis Cluster does not serve every slot (cluster_state is not ok)');
        return;
      }
      const [role] = (await this.client.role()) as unknown[];
      if (role !== 'master') throw new Error(`Redis answers as a ${String(role)}: no writable master is known`);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.feed.close();
    await Promise.all([quitOrDisconnect(this.subscriber), quitOrDisconnect(this.client)]);
  }

  /** The `{sid}` hash tag keeps everything about one session in one Cluster slot. */
  private sessionKey(sid: string): string {
    return `${this.keyPrefix}session:{${sid}}`;
  }

  /** A user's sessions, by creation time; the `{sub}` hash tag gives each user's set one Cluster slot. */
  private endedProviderSessionKey(sid: string): string {
    return `${this.keyPrefix}ended-session:{${sid}}`;
  }

  private userSessionsKey(sub: string): string {
    return `${this.keyPrefix}user-sessions:{${sub}}`;
  }

  /** The `{id}` hash tag: one record, one Cluster slot. */
  private requestKey(id: string): string {
    return `${this.keyPrefix}request:{${id}}`;
  }

  /**
   * The hash under `key`, or null when there is none. A key of another type
   * (the JSON string an earlier version wrote, or anything not written by
   * this code) is no record either: it expires by its own TTL.
   */
  private async readHash(key: string): Promise<Hash | null> {
    const hash = await this.run(() => this.client.hgetall(key).catch(wrongTypeAsUnreadable));
    // HGETALL answers an empty hash for a missing key; NOT_A_HASH is just as
    // empty, but reads on to the decoder, which refuses it (and is logged).
    return hash !== NOT_A_HASH && Object.keys(hash).length === 0 ? null : hash;
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

/**
 * PX takes a positive whole number of milliseconds. Anything else is a bug in
 * the caller (the configured retention is a positive number of seconds), not
 * a Redis failure, so it is not reported as one.
 */
function retentionPx(retentionMs: number): number {
  if (!Number.isFinite(retentionMs) || retentionMs <= 0) {
    throw new RangeError(`retentionMs must be a positive number of milliseconds, not ${retentionMs}`);
  }
  return Math.ceil(retentionMs);
}

/** What a key of another type reads as: a hash with none of a record's fields. */
const NOT_A_HASH: Hash = Object.freeze({});

function wrongTypeAsUnreadable(error: unknown): Hash {
  if (error instanceof Error && error.message.startsWith('WRONGTYPE')) return NOT_A_HASH;
  throw error;
}
