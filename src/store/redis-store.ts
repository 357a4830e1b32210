// The production store: every instance of a deployment shares it, and it
// survives their restarts. Two connections per instance: one for commands,
// one subscribed to the announcement channels, session revocations and
// request status changes (a subscribed connection can send nothing else).
//
// The boundary rule: whatever goes wrong inside ioredis (refused connection,
// timeout, reply error) leaves this file as one `store_unavailable` error, and
// no operation waits longer than `operationTimeoutMs`. Callers answer 503 and
// never see, or hang on, Redis itself.
import type { Cluster, Redis } from 'ioredis';
import { pino, type Logger } from 'pino';
import { gatehouseError, isGatehouseError, type GatehouseError } from '../http/errors.js';
import type {
  RequestRecord,
  RequestStatusChange,
  RevocationListener,
  SessionRecord,
  Store,
  TerminalStatus,
  TransitionOutcome,
} from './store.js';
import { Listeners } from './listeners.js';

export type RedisClient = Redis | Cluster;

export interface RedisStoreOptions {
  /** Put in front of every key and of the channel, so deployments can share a Redis. */
  keyPrefix: string;
  logger?: Logger;
  /** The longest any operation may take before it fails as `store_unavailable`. */
  operationTimeoutMs?: number;
}

/** Above the client's own 2 s command timeout: a last guard, not the usual path. */
const DEFAULT_OPERATION_TIMEOUT_MS = 2_500;
const QUIT_TIMEOUT_MS = 1_000;
const SUBSCRIBE_RETRY_DELAY_MS = 1_000;
/** A down Redis errors on every reconnect attempt; one warning per interval is enough. */
const CONNECTION_WARNING_INTERVAL_MS = 10_000;

// Deletes and announces in one step, so no failure between the two can leave
// a session deleted here but still trusted by the other instances' caches.
// PUBLISH takes no key, so the script still touches a single slot.
const REVOKE_AND_ANNOUNCE = `
if redis.call('DEL', KEYS[1]) == 1 then
  redis.call('PUBLISH', ARGV[1], ARGV[2])
  return 1
end
return 0`;

// Moves a pending request record to a terminal state and announces it, in one
// step: Redis runs a script alone, so of two concurrent conflicting
// transitions exactly one finds the record pending. One key, and PUBLISH
// takes none: a single slot.
//
// KEYS[1] the record; ARGV: the terminal status, updatedAt (epoch ms, as
// text), retentionMs, the channel, the announcement.
//
// The record is decoded with cjson but re-encoded by hand: cjson.encode
// writes numbers with 14 significant digits (and switches to exponents), so
// epoch milliseconds of 16 digits would come back changed. Integers are
// written in full, other numbers with 17 digits (enough for any double);
// strings, booleans and nulls go through cjson.encode, which is exact for
// them. Fields the record lacks stay absent: a decoded table has no nils.
// A record is flat; one that is not (a nested value), or that cjson cannot
// read (a lone UTF-16 surrogate escape, which JSON.stringify may write), is
// answered 'unreadable' and left as it is.
const TRANSITION_REQUEST = `
local json = redis.call('GET', KEYS[1])
if not json then return 'not_found' end
local ok, record = pcall(cjson.decode, json)
if not ok or type(record) ~= 'table' or type(record.status) ~= 'string' then return 'unreadable' end
if record.status == ARGV[1] then return 'already_applied' end
if record.status ~= 'pending' then return 'conflict' end
record.status = ARGV[1]
record.updatedAt = tonumber(ARGV[2])
local fields = {}
for name, value in pairs(record) do
  if type(name) ~= 'string' or type(value) == 'table' then return 'unreadable' end
  local encoded
  if type(value) == 'number' then
    if value ~= value or value == math.huge or value == -math.huge then return 'unreadable' end
    if value == math.floor(value) and math.abs(value) <= 9007199254740992 then
      encoded = string.format('%.0f', value)
    else
      encoded = string.format('%.17g', value)
    end
  else
    encoded = cjson.encode(value)
  end
  fields[#fields + 1] = cjson.encode(name) .. ':' .. encoded
end
redis.call('SET', KEYS[1], '{' .. table.concat(fields, ',') .. '}', 'PX', ARGV[3])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 'applied'`;

/** The script above, as ioredis' `defineCommand` adds it to the client (EVALSHA, EVAL when not loaded yet). */
interface TransitionRequestCommand {
  gatehouseTransitionRequest(
    key: string,
    status: TerminalStatus,
    updatedAt: string,
    retentionMs: number,
    channel: string,
    announcement: string,
  ): Promise<unknown>;
}

const REQUEST_STATUSES: ReadonlySet<unknown> = new Set(['pending', 'completed', 'failed']);

export class RedisStore implements Store {
  readonly kind = 'redis' as const;

  private readonly client: RedisClient & TransitionRequestCommand;
  private readonly subscriber: RedisClient;
  private readonly keyPrefix: string;
  private readonly revocationChannel: string;
  private readonly requestStatusChannel: string;
  private readonly logger: Logger;
  private readonly revocations: Listeners<string>;
  private readonly statusChanges: Listeners<RequestStatusChange>;
  private readonly feedResumed: Listeners<void>;
  private readonly operationTimeoutMs: number;
  private readonly subscribed: Promise<void>;
  private closed = false;

  /** Takes ownership of `client`: `close()` quits it. */
  constructor(client: RedisClient, options: RedisStoreOptions) {
    client.defineCommand('gatehouseTransitionRequest', { numberOfKeys: 1, lua: TRANSITION_REQUEST });
    this.client = client as RedisClient & TransitionRequestCommand;
    this.keyPrefix = options.keyPrefix;
    this.revocationChannel = `${options.keyPrefix}revocations`;
    this.requestStatusChannel = `${options.keyPrefix}request-status`;
    this.logger = options.logger ?? pino({ enabled: false });
    this.revocations = new Listeners<string>('session revocation', this.logger);
    this.statusChanges = new Listeners<RequestStatusChange>('request status', this.logger);
    this.feedResumed = new Listeners<void>('revocation feed', this.logger);
    this.operationTimeoutMs = options.operationTimeoutMs ?? DEFAULT_OPERATION_TIMEOUT_MS;

    this.subscriber = duplicateForSubscribing(client);
    this.watchConnection(this.client, 'commands');
    this.watchConnection(this.subscriber, 'subscriber');
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.revocationChannel) this.revocations.emit(message);
      else if (channel === this.requestStatusChannel) this.hearStatusChange(message);
    });
    this.watchRevocationFeed();
    this.subscribed = new Promise((resolve) => this.subscribeToAnnouncements(resolve));
  }

  /**
   * Resolves once revocations and request status changes announced by other
   * instances reach this one (never rejects). Until then (Redis down at
   * start) they are missed: `createStore` waits for this, for a bounded time.
   */
  listening(): Promise<void> {
    return this.subscribed;
  }

  async createSession(session: SessionRecord): Promise<void> {
    // Already over: nothing to keep, and PXAT rejects a time of 0 or less.
    if (session.expiresAt <= Date.now()) return;
    await this.run(() =>
      this.client.set(this.sessionKey(session.sid), JSON.stringify(session), 'PXAT', Math.ceil(session.expiresAt)),
    );
  }

  async getSession(sid: string): Promise<SessionRecord | null> {
    const json = await this.run(() => this.client.get(this.sessionKey(sid)));
    return json === null ? null : this.parseSession(json, sid);
  }

  async revokeSession(sid: string): Promise<boolean> {
    const deleted = await this.run(() =>
      this.client.eval(REVOKE_AND_ANNOUNCE, 1, this.sessionKey(sid), this.revocationChannel, sid),
    );
    if (deleted !== 1) return false;
    // Our own subscriber will hear the announcement too, a moment later; the
    // caller must not wait for that round trip. Listeners must take a repeated
    // sid calmly, so the echo is harmless.
    this.revocations.emit(sid);
    return true;
  }

  onSessionRevoked(listener: RevocationListener): () => void {
    return this.revocations.add(listener);
  }

  onRevocationFeedResumed(listener: () => void): () => void {
    return this.feedResumed.add(listener);
  }

  async createRequest(record: RequestRecord, retentionMs: number): Promise<boolean> {
    const ttlMs = retentionPx(retentionMs);
    const reply = await this.run(() =>
      this.client.set(this.requestKey(record.id), JSON.stringify(record), 'PX', ttlMs, 'NX'),
    );
    return reply === 'OK';
  }

  async getRequest(id: string): Promise<RequestRecord | null> {
    const json = await this.run(() => this.client.get(this.requestKey(id)));
    return json === null ? null : this.parseRequest(json, id);
  }

  async transitionRequest(
    id: string,
    status: TerminalStatus,
    retentionMs: number,
    now = Date.now(),
  ): Promise<TransitionOutcome> {
    const ttlMs = retentionPx(retentionMs);
    if (!Number.isFinite(now)) throw new RangeError(`now must be a finite number of epoch milliseconds, not ${now}`);
    const change: RequestStatusChange = { id, status };
    const reply = await this.run(() =>
      this.client.gatehouseTransitionRequest(
        this.requestKey(id),
        status,
        String(now),
        ttlMs,
        this.requestStatusChannel,
        JSON.stringify(change),
      ),
    );
    switch (reply) {
      case 'applied':
        // As with revocations: our own subscriber hears the echo later, and
        // listeners take a repeated change calmly.
        this.statusChanges.emit(change);
        return 'applied';
      case 'already_applied':
      case 'conflict':
      case 'not_found':
        return reply;
      case 'unreadable':
        // Not something this code wrote: as getRequest does, treat it as absent.
        this.logger.warn({ requestId: id }, 'ignoring an unreadable request record');
        return 'not_found';
      default:
        throw storeUnavailable(new Error(`unexpected reply from the transition script: ${String(reply)}`));
    }
  }

  onRequestStatusChanged(listener: (change: RequestStatusChange) => void): () => void {
    return this.statusChanges.add(listener);
  }

  async ping(): Promise<void> {
    await this.run(() => this.client.ping());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.revocations.clear();
    this.statusChanges.clear();
    this.feedResumed.clear();
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

  private async run<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await withinDeadline(operation(), this.operationTimeoutMs);
    } catch (error) {
      throw storeUnavailable(error);
    }
  }

  private parseSession(json: string, sid: string): SessionRecord | null {
    const session = parseJsonOrNull(json) as Partial<SessionRecord> | null;
    if (session?.sid !== sid || typeof session.expiresAt !== 'number') {
      // Not something this code wrote. Treating it as absent fails closed
      // (the user logs in again) instead of failing every request.
      this.logger.warn({ sid }, 'ignoring an unreadable session record');
      return null;
    }
    // Redis expires by its own clock; this keeps a skewed one from granting
    // extra life, exactly like the memory store.
    return session.expiresAt > Date.now() ? (session as SessionRecord) : null;
  }

  private parseRequest(json: string, id: string): RequestRecord | null {
    const record = parseJsonOrNull(json);
    if (!isRequestRecord(record) || record.id !== id) {
      // Not something this code wrote: absent, rather than failing every status query.
      this.logger.warn({ requestId: id }, 'ignoring an unreadable request record');
      return null;
    }
    return record;
  }

  /** An announcement from the channel: anyone with access to Redis can publish there, so it is checked. */
  private hearStatusChange(message: string): void {
    const change = parseJsonOrNull(message) as Partial<RequestStatusChange> | null;
    if (
      typeof change !== 'object' ||
      change === null ||
      typeof change.id !== 'string' ||
      change.id === '' ||
      (change.status !== 'completed' && change.status !== 'failed')
    ) {
      this.logger.debug({ channel: this.requestStatusChannel }, 'ignoring a malformed request status announcement');
      return;
    }
    this.statusChanges.emit({ id: change.id, status: change.status });
  }

  /**
   * After the first SUBSCRIBE is answered, resubscribe() renews it on every
   * reconnect. Until then it is ours to repeat here: the subscriber
   * waits for Redis patiently, but a fatal connection error (e.g. a wrong
   * password) still fails the command.
   */
  private subscribeToAnnouncements(onSubscribed: () => void, failures = 0): void {
    this.subscriber.subscribe(this.revocationChannel, this.requestStatusChannel).then(
      () => {
        if (failures > 0) this.logger.info('subscribed to session revocations and request status changes');
        onSubscribed();
      },
      (error: unknown) => {
        if (this.closed) return;
        if (failures === 0) {
          this.logger.warn(
            { error: describeError(error) },
            'cannot subscribe to session revocations and request status changes yet; retrying',
          );
        }
        setTimeout(() => this.subscribeToAnnouncements(onSubscribed, failures + 1), SUBSCRIBE_RETRY_DELAY_MS).unref();
      },
    );
  }

  /**
   * While the subscriber is disconnected, revocations published by other
   * instances are lost (pub/sub keeps no backlog). When it is back, listeners
   * are told so they can drop whatever they cached meanwhile.
   */
  private watchRevocationFeed(): void {
    let wasReady = false;
    let interrupted = false;
    this.subscriber.on('ready', () => {
      if (interrupted && !this.closed) this.resubscribe();
      wasReady = true;
      interrupted = false;
    });
    this.subscriber.on('close', () => {
      if (wasReady) interrupted = true;
    });
  }

  /**
   * ioredis's own autoResubscribe sends SUBSCRIBE on reconnect without
   * handling its failure: a connection closing at that moment became an
   * unhandled rejection. So it is off, and the store renews the subscription
   * itself; a failure here is retried on the next 'ready'.
   */
  private resubscribe(): void {
    this.subscriber.subscribe(this.revocationChannel, this.requestStatusChannel).then(
      () => {
        if (this.closed) return;
        this.logger.info('revocation feed resumed; cached token checks are dropped');
        this.feedResumed.emit();
      },
      (error: unknown) => {
        if (!this.closed) this.logger.warn({ error: describeError(error) }, 'could not renew the subscriptions; retrying on the next reconnect');
      },
    );
  }

  private watchConnection(connection: RedisClient, role: 'commands' | 'subscriber'): void {
    let lastWarningAt = -Infinity;
    let suppressed = 0;
    let failing = false;
    // Without an 'error' listener an EventEmitter error would crash the
    // process; with it, ioredis keeps reconnecting (retryStrategy) instead.
    connection.on('error', (error: unknown) => {
      failing = true;
      if (this.closed) return;
      const now = Date.now();
      if (now - lastWarningAt < CONNECTION_WARNING_INTERVAL_MS) {
        suppressed += 1;
        return;
      }
      this.logger.warn(
        { connection: role, error: describeError(error), suppressedWarnings: suppressed },
        'Redis connection failing; state store requests answer 503 until it recovers',
      );
      lastWarningAt = now;
      suppressed = 0;
    });
    connection.on('ready', () => {
      if (!failing) return;
      failing = false;
      this.logger.info({ connection: role }, 'Redis connection recovered');
    });
  }
}

/**
 * A second connection with the same address and credentials, for SUBSCRIBE.
 * Its SUBSCRIBE must wait for Redis however long it takes: a timed-out first
 * SUBSCRIBE is never repeated by autoResubscribe, which only renews
 * subscriptions Redis once confirmed.
 */
function duplicateForSubscribing(client: RedisClient): RedisClient {
  const patient = {
    maxRetriesPerRequest: null,
    commandTimeout: undefined,
    enableAutoPipelining: false,
    autoResubscribe: false, // renewed by the store itself (resubscribe)
  };
  if (client.isCluster) {
    const cluster = client as Cluster;
    return cluster.duplicate([], { redisOptions: { ...cluster.options.redisOptions, ...patient } });
  }
  return (client as Redis).duplicate(patient);
}

async function quitOrDisconnect(connection: RedisClient): Promise<void> {
  try {
    // QUIT lets answers already on their way arrive; a dead connection
    // cannot answer it, so it gets cut.
    await withinDeadline(connection.quit(), QUIT_TIMEOUT_MS);
  } catch {
    connection.disconnect();
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

function isRequestRecord(value: unknown): value is RequestRecord {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Partial<Record<keyof RequestRecord, unknown>>;
  return (
    typeof record.id === 'string' &&
    REQUEST_STATUSES.has(record.status) &&
    typeof record.sub === 'string' &&
    typeof record.route === 'string' &&
    typeof record.upstream === 'string' &&
    (record.statusUrl === undefined || typeof record.statusUrl === 'string') &&
    typeof record.createdAt === 'number' &&
    typeof record.updatedAt === 'number'
  );
}

function parseJsonOrNull(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return null;
  }
}

function withinDeadline<T>(operation: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  // The losing operation still settles later; race() has subscribed to it, so
  // its rejection is handled and cannot surface as an unhandled one.
  return Promise.race([operation, deadline]).finally(() => clearTimeout(timer));
}

function storeUnavailable(error: unknown): GatehouseError {
  if (isGatehouseError(error)) return error;
  return gatehouseError('store_unavailable', { cause: withoutCredentials(error), headers: { 'Retry-After': '1' } });
}

/**
 * ioredis attaches the failed command to reply errors, and when AUTH fails it
 * rejects every queued command with AUTH's error: its arguments are the
 * password. The cause is kept for the log, so the password must go.
 */
function withoutCredentials(error: unknown): unknown {
  const command = (error as { command?: { name?: unknown; args?: unknown } } | null)?.command;
  if (command && typeof command.name === 'string' && ['auth', 'hello'].includes(command.name.toLowerCase())) {
    command.args = ['[redacted]'];
  }
  return error;
}

/** Only fields known to be free of secrets: never the error object itself. */
function describeError(error: unknown): { name?: string; code?: string; message?: string } {
  if (!(error instanceof Error)) return { message: String(error) };
  const { code } = error as NodeJS.ErrnoException;
  return { name: error.name, ...(code === undefined ? {} : { code }), message: error.message };
}
