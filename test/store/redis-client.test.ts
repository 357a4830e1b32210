import { Cluster, Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { ReconnectSchedule, reconnectDelayMs } from '../../src/store/reconnect-schedule.js';
import { createRedisClient } from '../../src/store/redis-client.js';
import { RETRY_AFTER_MAX_S, RETRY_AFTER_MIN_S, storeUnavailable } from '../../src/store/store-unavailable.js';
import { parseStoreUrl } from '../../src/store/store-url.js';
import { gatehouseError } from '../../src/core/errors.js';

describe('reconnectDelayMs', () => {
  it('backs off to a cap and never gives up', () => {
    const delays = Array.from({ length: 1_000 }, (_, i) => reconnectDelayMs(i + 1));
    for (const delay of delays) {
      expect(Number.isFinite(delay)).toBe(true);
      expect(delay).toBeGreaterThan(0);
      expect(delay).toBeLessThan(2_100);
    }
    expect(reconnectDelayMs(1)).toBeLessThan(200);
    expect(reconnectDelayMs(50)).toBeGreaterThanOrEqual(2_000);
  });
});

describe('ReconnectSchedule', () => {
  it('knows how long until the next reconnect attempt, from the delay it gave the client', () => {
    let now = 1_000_000;
    const schedule = new ReconnectSchedule({ delayMs: (attempt) => attempt * 1_000, now: () => now });
    expect(schedule.msUntilNextAttempt()).toBe(0);
    expect(schedule.retryStrategy(3)).toBe(3_000);
    expect(schedule.msUntilNextAttempt()).toBe(3_000);
    now += 1_200;
    expect(schedule.msUntilNextAttempt()).toBe(1_800);
    now += 5_000;
    // The attempt is under way or done: nothing is waiting.
    expect(schedule.msUntilNextAttempt()).toBe(0);
  });

  it('uses reconnectDelayMs unless told otherwise', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    try {
      const schedule = new ReconnectSchedule({ now: () => 0 });
      expect(schedule.retryStrategy(2)).toBe(200);
      expect(schedule.msUntilNextAttempt()).toBe(200);
    } finally {
      vi.restoreAllMocks();
    }
  });
});

describe('storeUnavailable', () => {
  it('is a 503 whose Retry-After is the time given, in whole seconds rounded up', () => {
    const error = storeUnavailable(new Error('connection refused'), 2_001);
    expect(error).toMatchObject({ code: 'store_unavailable', status: 503, headers: { 'retry-after': '3' } });
    expect(error.cause).toBeInstanceOf(Error);
  });

  it.each([
    [0, RETRY_AFTER_MIN_S],
    [-5_000, RETRY_AFTER_MIN_S],
    [Number.NaN, RETRY_AFTER_MIN_S],
    [1, 1],
    [30_000, 30],
    [3_600_000, RETRY_AFTER_MAX_S],
    [Number.POSITIVE_INFINITY, RETRY_AFTER_MAX_S],
  ])('bounds a retry in %d ms to Retry-After %d', (ms, seconds) => {
    expect(storeUnavailable(new Error('down'), ms).headers['retry-after']).toBe(String(seconds));
  });

  it('passes a GatehouseError on as it is: the store that threw it knew when to retry', () => {
    const fromStore = storeUnavailable(new Error('down'), 9_000);
    expect(storeUnavailable(fromStore)).toBe(fromStore);
    const other = gatehouseError('invalid_bearer_token');
    expect(storeUnavailable(other)).toBe(other);
  });
});

describe('createRedisClient', () => {
  // Nothing listens on port 1: the clients are built, inspected and cut.
  it('gives a standalone client the fail-fast settings', () => {
    const client = createRedisClient(parseStoreUrl('redis://:pw@127.0.0.1:1/4')) as Redis;
    client.on('error', () => {});
    client.disconnect();
    expect(client).toBeInstanceOf(Redis);
    expect(client.options).toMatchObject({
      host: '127.0.0.1',
      port: 1,
      password: 'pw',
      db: 4,
      enableAutoPipelining: true,
      maxRetriesPerRequest: 1,
      connectTimeout: 2_000,
      commandTimeout: 2_000,
    });
    expect(typeof client.options.retryStrategy?.(10_000)).toBe('number');
  });

  it.each([
    ['redis://127.0.0.1:1', 'retryStrategy'],
    ['redis-sentinel://127.0.0.1:1/m', 'sentinelRetryStrategy'],
    ['redis-cluster://127.0.0.1:1', 'clusterRetryStrategy'],
  ])('lets a client of %s report its reconnect delays (%s) to the schedule it is given', (url, option) => {
    const schedule = new ReconnectSchedule();
    const client = createRedisClient(parseStoreUrl(url), schedule);
    client.on('error', () => {});
    client.disconnect();
    expect((client.options as unknown as Record<string, unknown>)[option]).toBe(schedule.retryStrategy);
  });

  it('gives a sentinel client its sentinels, master, password and db', () => {
    const client = createRedisClient(parseStoreUrl('redis-sentinel://:pw@127.0.0.1:1,127.0.0.1:2/mymaster?db=2')) as Redis;
    client.on('error', () => {});
    client.disconnect();
    expect(client.options).toMatchObject({
      sentinels: [
        { host: '127.0.0.1', port: 1 },
        { host: '127.0.0.1', port: 2 },
      ],
      name: 'mymaster',
      password: 'pw',
      db: 2,
      enableAutoPipelining: true,
      maxRetriesPerRequest: 1,
    });
  });

  it('gives a cluster client its nodes, password and TLS', () => {
    const client = createRedisClient(parseStoreUrl('redis-cluster://:pw@127.0.0.1:1,127.0.0.1:2?tls=true')) as Cluster;
    client.on('error', () => {});
    client.disconnect();
    expect(client).toBeInstanceOf(Cluster);
    expect(client.options).toMatchObject({
      enableAutoPipelining: true,
      redisOptions: { password: 'pw', tls: {}, maxRetriesPerRequest: 1, connectTimeout: 2_000, commandTimeout: 2_000 },
    });
  });
});
