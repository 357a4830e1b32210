// Chooses the store from `store.url`: none means the in-memory store, a Redis
// URL the Redis store over the right kind of ioredis client. A Redis that is
// down at start does not stop the gateway: it starts, answers 503 where it
// needs the store, and recovers by itself when Redis returns.
import type { Logger } from 'pino';
import type { LimitsConfig, StoreConfig } from '../config/schema.js';
import { MemoryStore } from './memory-store.js';
import { ReconnectSchedule } from './reconnect-schedule.js';
import { createRedisClient } from './redis-client.js';
import { withinDeadline } from './redis-connection.js';
import { RedisStore } from './redis-store.js';
import type { Store } from './store.js';
import { parseStoreUrl, redactStoreUrl } from './store-url.js';

/** How long start-up waits to report whether Redis answers (it starts either way). */
const STARTUP_PROBE_TIMEOUT_MS = 3_000;

/** `limits`: the sessions-per-user cap and the in-memory store's bounds; absent, their defaults. */
export async function createStore(
  config: StoreConfig,
  logger: Logger,
  limits?: Pick<LimitsConfig, 'maxSessionsPerUser' | 'memoryMaxSessions' | 'memoryMaxRequests'>,
): Promise<Store> {
  const log = logger.child({ component: 'store' });
  if (!config.url) {
    log.warn(
      'no store.url is configured: using the in-memory store, so sessions and request statuses are neither durable ' +
        '(lost on restart) nor shared between instances; configure Redis (store.url or REDIS_URL) to run more than one instance',
    );
    return new MemoryStore({
      logger: log,
      ...(limits && { maxSessionsPerUser: limits.maxSessionsPerUser, maxSessions: limits.memoryMaxSessions, maxRequests: limits.memoryMaxRequests }),
    });
  }

  const description = parseStoreUrl(config.url);
  const reconnects = new ReconnectSchedule();
  const store = new RedisStore(createRedisClient(description, reconnects), {
    keyPrefix: config.keyPrefix,
    logger: log,
    reconnects,
    ...(limits && { maxSessionsPerUser: limits.maxSessionsPerUser }),
    // Sentinel and Cluster fail over on purpose: acknowledge records only once a replica holds them.
    replicasToConfirm: description.mode === 'sentinel' || description.mode === 'cluster' ? 1 : 0,
  });
  const where = { store: redactStoreUrl(config.url), mode: description.mode };
  const answered = await withinDeadline(Promise.all([store.ping(), store.listening(), store.eviction.firstReading]), STARTUP_PROBE_TIMEOUT_MS).then(
    () => true,
    () => false,
  );
  if (answered) {
    log.info(where, 'state store: Redis answers');
  } else {
    log.warn(where, 'state store: Redis does not answer yet; starting anyway, requests that need it answer 503 until it does');
  }
  return store;
}
