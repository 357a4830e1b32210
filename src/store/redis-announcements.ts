// What instances sharing one Redis tell each other: session revocations,
// request status changes, "signing keys changed" and "users changed",
// published on four channels and heard on a
// connection of their own (a subscribed connection can send nothing else).
// All channels are heard on that one connection, so announcements arrive
// in the order Redis published them.
//
// Pub/sub keeps no backlog: while the connection is down, announcements are
// lost. When it is back, the `resumed` listeners are told, so that whatever
// was cached on the strength of the feed can be dropped.
import type { Logger } from 'pino';
import type { Keyspace } from './keyspace.js';
import { Listeners } from './listeners.js';
import type { RedisClient } from './redis-client.js';
import { describeError } from './redis-connection.js';
import type { RequestStatusChange } from './store.js';

const SUBSCRIBE_RETRY_DELAY_MS = 1_000;

export class AnnouncementFeed {
  readonly revocationChannel: string;
  readonly statusChannel: string;
  readonly keysChangedChannel: string;
  readonly usersChangedChannel: string;
  /** Sids of revoked sessions, from any instance (our own announcements come back too). */
  readonly revocations: Listeners<string>;
  readonly statusChanges: Listeners<RequestStatusChange>;
  /** Some instance published or retired a signing key (tokens/shared-keyset.ts reads the store again). */
  readonly keysChanged: Listeners<void>;
  /** Some instance or command changed the users held in the store (users/ reads them again). */
  readonly usersChanged: Listeners<void>;
  /** The feed was interrupted and flows again: announcements may have been missed. */
  readonly resumed: Listeners<void>;
  /**
   * Resolves once announcements reach this instance (never rejects). Until
   * then (Redis down at start) they are missed.
   */
  readonly subscribed: Promise<void>;

  readonly #subscriber: RedisClient;
  readonly #logger: Logger;
  #closed = false;

  /** Listens on `subscriber`, which must be a connection of its own; its owner closes it. */
  constructor(subscriber: RedisClient, options: { keys: Keyspace; logger: Logger }) {
    this.#subscriber = subscriber;
    this.#logger = options.logger;
    this.revocationChannel = options.keys.revocationChannel;
    this.statusChannel = options.keys.requestStatusChannel;
    this.keysChangedChannel = options.keys.keysChangedChannel;
    this.usersChangedChannel = options.keys.usersChangedChannel;
    this.revocations = new Listeners<string>('session revocation', this.#logger);
    this.statusChanges = new Listeners<RequestStatusChange>('request status', this.#logger);
    this.keysChanged = new Listeners<void>('keys changed', this.#logger);
    this.usersChanged = new Listeners<void>('users changed', this.#logger);
    this.resumed = new Listeners<void>('revocation feed', this.#logger);

    subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.revocationChannel) this.revocations.emit(message);
      else if (channel === this.statusChannel) this.#hearStatusChange(message);
      // The message carries nothing to trust: the store is read again, and its entries are checked there.
      else if (channel === this.keysChangedChannel) this.keysChanged.emit();
      // Nor this one: whatever it names, the users are read again from the store.
      else if (channel === this.usersChangedChannel) this.usersChanged.emit();
    });
    this.#watchInterruptions();
    this.subscribed = new Promise((resolve) => this.#subscribe(resolve));
  }

  /** Stops telling anyone anything. */
  close(): void {
    this.#closed = true;
    this.revocations.clear();
    this.statusChanges.clear();
    this.keysChanged.clear();
    this.usersChanged.clear();
    this.resumed.clear();
  }

  /** Anyone with access to Redis can publish on the channel, so an announcement is checked. */
  #hearStatusChange(message: string): void {
    const change = parseJsonOrNull(message) as Partial<RequestStatusChange> | null;
    if (
      typeof change !== 'object' ||
      change === null ||
      typeof change.id !== 'string' ||
      change.id === '' ||
      (change.status !== 'completed' && change.status !== 'failed')
    ) {
      this.#logger.debug({ channel: this.statusChannel }, 'ignoring a malformed request status announcement');
      return;
    }
    this.statusChanges.emit({ id: change.id, status: change.status });
  }

  /**
   * After the first SUBSCRIBE is answered, #resubscribe renews it on every
   * reconnect. Until then it is ours to repeat here: the subscriber waits for
   * Redis patiently, but a fatal connection error (e.g. a wrong password)
   * still fails the command.
   */
  #subscribe(onSubscribed: () => void, failures = 0): void {
    this.#subscriber.subscribe(...this.#channels()).then(
      () => {
        if (failures > 0) this.#logger.info('subscribed to session revocations and request status changes');
        onSubscribed();
      },
      (error: unknown) => {
        if (this.#closed) return;
        if (failures === 0) {
          this.#logger.warn({ error: describeError(error) }, 'cannot subscribe to session revocations and request status changes yet; retrying');
        }
        setTimeout(() => this.#subscribe(onSubscribed, failures + 1), SUBSCRIBE_RETRY_DELAY_MS).unref();
      },
    );
  }

  #channels(): string[] {
    return [this.revocationChannel, this.statusChannel, this.keysChangedChannel, this.usersChangedChannel];
  }

  /** Deaf since its connection closed, until the subscriptions are renewed: announcements may be missed meanwhile. */
  get interrupted(): boolean {
    return this.#interrupted;
  }

  #interrupted = false;

  /** A connection that was ready, closed and is ready again has been deaf meanwhile. */
  #watchInterruptions(): void {
    let wasReady = false;
    let lostConnection = false;
    this.#subscriber.on('ready', () => {
      if (lostConnection && !this.#closed) this.#resubscribe();
      wasReady = true;
      lostConnection = false;
    });
    this.#subscriber.on('close', () => {
      if (!wasReady) return;
      lostConnection = true;
      this.#interrupted = true;
    });
  }

  /**
   * ioredis's own autoResubscribe sends SUBSCRIBE on reconnect without
   * handling its failure: a connection closing at that moment became an
   * unhandled rejection. So it is off, and the subscription is renewed here;
   * a failure is retried on the next 'ready'.
   */
  #resubscribe(): void {
    this.#subscriber.subscribe(...this.#channels()).then(
      () => {
        if (this.#closed) return;
        this.#interrupted = false;
        this.#logger.info('revocation feed resumed; cached token checks are dropped');
        this.resumed.emit();
      },
      (error: unknown) => {
        if (!this.#closed) this.#logger.warn({ error: describeError(error) }, 'could not renew the subscriptions; retrying on the next reconnect');
      },
    );
  }
}

function parseJsonOrNull(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return null;
  }
}
