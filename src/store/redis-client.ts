// The ioredis clients of the Redis store: the command connection for the
// kind of deployment the URL names, and its twin for SUBSCRIBE.
import { Cluster, Redis, SentinelConnector, type ClusterOptions, type RedisOptions } from 'ioredis';
import { ReconnectSchedule } from './reconnect-schedule.js';
import type { StoreUrlDescription } from './store-url.js';

export type RedisClient = Redis | Cluster;

const CONNECT_TIMEOUT_MS = 2_000;
const COMMAND_TIMEOUT_MS = 2_000;
/** A Cluster that is electing a new master, or moving a slot, answers again within a few hundred ms. */
const CLUSTER_RETRY_DELAY_MS = 100;
/**
 * The replay memory's script (redis-first-writers.ts), which gathers the keys of a turn into one call itself:
 * automatic pipelining would wrap each call in a Pipeline object of its own, the very cost it is there to save.
 */
export const FIRST_WRITERS_COMMAND = 'gatehouseFirstWriters';
const PIPELINING = { enableAutoPipelining: true, autoPipeliningIgnoredCommands: [FIRST_WRITERS_COMMAND] };

/**
 * After a failover the old master answers READONLY once it is a replica:
 * reconnect (Sentinel names the new master) and resend the command (2),
 * instead of failing it. Any other reply error is the caller's to handle.
 */
export function reconnectOnReadOnly(error: Error): boolean | 1 | 2 {
  return error.message.startsWith('READONLY') ? 2 : false;
}

type SentinelClientFactory = (this: SentinelConnector, ...args: unknown[]) => Redis;
const builtIn = (SentinelConnector.prototype as unknown as { connectToSentinel?: SentinelClientFactory }).connectToSentinel;

/**
 * ioredis's Sentinel connector, with a listener on its own connections to the sentinels (the failover detector's
 * +switch-master subscriptions, and the short ones that ask for the master): ioredis gives them none, so a sentinel
 * that restarts printed "[ioredis] Unhandled error event" and a stack on stderr at every reconnect attempt, outside
 * the log. What matters of such a failure reaches the log through the command connection (redis-connection.ts).
 * Should a later ioredis rename the method, this is ioredis's own connector again, no worse than before.
 */
class ListenedSentinelConnector extends SentinelConnector {}
if (typeof builtIn === 'function') {
  (ListenedSentinelConnector.prototype as unknown as { connectToSentinel: SentinelClientFactory }).connectToSentinel = function (...args) {
    const client = builtIn.apply(this, args);
    client.on('error', () => {});
    return client;
  };
}

/**
 * An ioredis client with the production settings: fail fast, never give up
 * reconnecting, and tell `reconnects` when the next attempt is due.
 */
export function createRedisClient(description: StoreUrlDescription, reconnects = new ReconnectSchedule()): RedisClient {
  // Each command gets one reconnect attempt and 2 s at most, so a request
  // fails (503) instead of waiting for Redis to return.
  const perConnection = {
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
  } satisfies RedisOptions;
  const { retryStrategy } = reconnects;

  switch (description.mode) {
    case 'standalone':
      return new Redis(description.url, { ...perConnection, ...PIPELINING, retryStrategy });
    case 'sentinel':
      return new Redis({
        ...perConnection,
        ...PIPELINING,
        // ioredis types a connector's options as unknown; a Sentinel connector takes these very options.
        Connector: ListenedSentinelConnector as unknown as NonNullable<RedisOptions['Connector']>,
        retryStrategy,
        sentinelRetryStrategy: retryStrategy,
        // Sentinel tells us of a switch at once (+switch-master), so writes
        // stop going to the old master well before it is demoted.
        failoverDetector: true,
        // Connect only to a node that says it is the master (ROLE), never to a
        // demoted one Sentinel has not caught up with.
        role: 'master',
        reconnectOnError: reconnectOnReadOnly,
        sentinels: description.sentinels,
        name: description.name,
        username: description.username,
        password: description.password,
        db: description.db ?? 0,
      });
    case 'cluster': {
      const options: ClusterOptions = {
        ...PIPELINING,
        clusterRetryStrategy: retryStrategy,
        slotsRefreshTimeout: CONNECT_TIMEOUT_MS,
        // MOVED and ASK are followed by ioredis itself (and MOVED refreshes the
        // slot map); CLUSTERDOWN and TRYAGAIN, answered while a replica takes
        // over or a slot moves, are retried after a pause instead of failing.
        retryDelayOnClusterDown: CLUSTER_RETRY_DELAY_MS,
        retryDelayOnTryAgain: CLUSTER_RETRY_DELAY_MS,
        retryDelayOnFailover: CLUSTER_RETRY_DELAY_MS,
        redisOptions: {
          ...perConnection,
          reconnectOnError: reconnectOnReadOnly,
          username: description.username,
          password: description.password,
          ...(description.tls ? { tls: {} } : {}),
        },
      };
      return new Cluster(description.nodes, options);
    }
  }
}

/**
 * A second connection with the same address and credentials, for SUBSCRIBE.
 * Its SUBSCRIBE must wait for Redis however long it takes: a timed-out first
 * SUBSCRIBE is never repeated by autoResubscribe, which only renews
 * subscriptions Redis once confirmed.
 */
export function duplicateForSubscribing(client: RedisClient): RedisClient {
  const patient = {
    maxRetriesPerRequest: null,
    commandTimeout: undefined,
    enableAutoPipelining: false,
    autoResubscribe: false, // renewed by the announcement feed itself (resubscribe)
  };
  if (client.isCluster) {
    const cluster = client as Cluster;
    return cluster.duplicate([], { redisOptions: { ...cluster.options.redisOptions, ...patient } });
  }
  return (client as Redis).duplicate(patient);
}

/**
 * A second command connection with the same address, credentials and
 * settings: the one request records are written over when a replica must
 * confirm them, since WAIT holds its connection until it answers.
 */
export function duplicateForWriting(client: RedisClient): RedisClient {
  return client.isCluster ? (client as Cluster).duplicate() : (client as Redis).duplicate();
}
