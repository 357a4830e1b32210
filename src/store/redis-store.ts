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
import { pino, type Logger } from 'pino';
import type { GatehouseError } from '../http/errors.js';
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
}

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
  private closed = false;

  /** Takes ownership of `client`: `close()` quits it. */
  constructor(client: RedisClient, options: RedisStoreOptions) {
    this.client = client;
    this.scripts = defineStoreScripts(client);
    this.keyPrefix = options.keyPrefix;
    this.logger = options.logger ?? pino({ enabled: false });
    this.operationTimeoutMs = options.operationTimeoutMs ?? DEFAULT_OPERATION_TIMEOUT_MS;
    this.reconnects = options.reconnects ?? new ReconnectSchedule();

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
    await this.run(() => this.scripts.createSession(this.sessionKey(session.sid), Math.ceil(session.expiresAt), fields));
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

  onSessionRevoked(listener: RevocationListener): () => void {
    return this.feed.revocations.add(listener);
  }

  onRevocationFeedResumed(listener: () => void): () => void {
    return this.feed.resumed.add(listener);
  }

  async createRequest(record: RequestRecord, retentionMs: number): Promise<boolean> {
    const ttlMs = retentionPx(retentionMs);
    const fields = requestFields(record);
    return this.run(() => this.scripts.createRequest(this.requestKey(record.id), ttlMs, fields));
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

  async ping(): Promise<void> {
    await this.run(() => this.client.ping());
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
