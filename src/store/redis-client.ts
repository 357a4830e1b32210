// The ioredis clients of the Redis store: the command connection for the
// kind of deployment the URL names, and its twin for SUBSCRIBE.
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { ReconnectSchedule } from './reconnect-schedule.js';
import type { StoreUrlDescription } from './store-url.js';

export type RedisClient = Redis | Cluster;

const CONNECT_TIMEOUT_MS = 2_000;
const COMMAND_TIMEOUT_MS = 2_000;

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
      return new Redis(description.url, { ...perConnection, enableAutoPipelining: true, retryStrategy });
    case 'sentinel':
      return new Redis({
        ...perConnection,
        enableAutoPipelining: true,
        retryStrategy,
        sentinelRetryStrategy: retryStrategy,
        sentinels: description.sentinels,
        name: description.name,
        username: description.username,
        password: description.password,
        db: description.db ?? 0,
      });
    case 'cluster': {
      const options: ClusterOptions = {
        enableAutoPipelining: true,
        clusterRetryStrategy: retryStrategy,
        slotsRefreshTimeout: CONNECT_TIMEOUT_MS,
        redisOptions: {
          ...perConnection,
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
