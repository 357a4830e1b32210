// The production store: every instance of a deployment shares it, and it
// survives their restarts. Two connections per instance: one for commands,
// one subscribed to the revocation channel (a subscribed connection can send
// nothing else).
//
// The boundary rule: whatever goes wrong inside ioredis (refused connection,
// timeout, reply error) leaves this file as one `store_unavailable` error, and
// no operation waits longer than `operationTimeoutMs`. Callers answer 503 and
// never see, or hang on, Redis itself.
import type { Cluster, Redis } from 'ioredis';
import { pino, type Logger } from 'pino';
import { gatehouseError, isGatehouseError, type GatehouseError } from '../http/errors.js';
import type { RevocationListener, SessionRecord, Store } from './store.js';
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

export class RedisStore implements Store {
  readonly kind = 'redis' as const;

  private readonly client: RedisClient;
  private readonly subscriber: RedisClient;
  private readonly keyPrefix: string;
  private readonly revocationChannel: string;
  private readonly logger: Logger;
  private readonly revocations: Listeners<string>;
  private readonly feedResumed: Listeners<void>;
  private readonly operationTimeoutMs: number;
  private readonly subscribed: Promise<void>;
  private closed = false;

  /** Takes ownership of `client`: `close()` quits it. */
  constructor(client: RedisClient, options: RedisStoreOptions) {
    this.client = client;
    this.keyPrefix = options.keyPrefix;
    this.revocationChannel = `${options.keyPrefix}revocations`;
    this.logger = options.logger ?? pino({ enabled: false });
    this.revocations = new Listeners<string>('session revocation', this.logger);
    this.feedResumed = new Listeners<void>('revocation feed', this.logger);
    this.operationTimeoutMs = options.operationTimeoutMs ?? DEFAULT_OPERATION_TIMEOUT_MS;

    this.subscriber = duplicateForSubscribing(client);
    this.watchConnection(this.client, 'commands');
    this.watchConnection(this.subscriber, 'revocations');
    this.subscriber.on('message', (channel: string, sid: string) => {
      if (channel === this.revocationChannel) this.revocations.emit(sid);
    });
    this.watchRevocationFeed();
    this.subscribed = new Promise((resolve) => this.subscribeToRevocations(resolve));
  }

  /**
   * Resolves once revocations announced by other instances reach this one
   * (never rejects). Until then (Redis down at start) they are missed:
   * `createStore` waits for this, for a bounded time.
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

  async ping(): Promise<void> {
    await this.run(() => this.client.ping());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.revocations.clear();
    this.feedResumed.clear();
    await Promise.all([quitOrDisconnect(this.subscriber), quitOrDisconnect(this.client)]);
  }

  /** The `{sid}` hash tag keeps everything about one session in one Cluster slot. */
  private sessionKey(sid: string): string {
    return `${this.keyPrefix}session:{${sid}}`;
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

  /**
   * After the first SUBSCRIBE is answered, ioredis (autoResubscribe) renews
   * it on every reconnect. Until then it is ours to repeat: the subscriber
   * waits for Redis patiently, but a fatal connection error (e.g. a wrong
   * password) still fails the command.
   */
  private subscribeToRevocations(onSubscribed: () => void, failures = 0): void {
    this.subscriber.subscribe(this.revocationChannel).then(
      () => {
        if (failures > 0) this.logger.info('subscribed to session revocations');
        onSubscribed();
      },
      (error: unknown) => {
        if (this.closed) return;
        if (failures === 0) {
          this.logger.warn({ error: describeError(error) }, 'cannot subscribe to session revocations yet; retrying');
        }
        setTimeout(() => this.subscribeToRevocations(onSubscribed, failures + 1), SUBSCRIBE_RETRY_DELAY_MS).unref();
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
      if (interrupted && !this.closed) {
        this.logger.info('revocation feed resumed; cached token checks are dropped');
        this.feedResumed.emit();
      }
      wasReady = true;
      interrupted = false;
    });
    this.subscriber.on('close', () => {
      if (wasReady) interrupted = true;
    });
  }

  private watchConnection(connection: RedisClient, role: 'commands' | 'revocations'): void {
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
    autoResubscribe: true,
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
