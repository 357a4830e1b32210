import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, Redis } from 'ioredis';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { GatehouseError } from '../../src/http/errors.js';
import {
  createRedisClient,
  createStore,
  parseStoreUrl,
  reconnectDelayMs,
  redactStoreUrl,
} from '../../src/store/create-store.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { startRedisServer, uniquePrefix } from '../helpers/redis-server.js';
import { sessionRecord } from './store-contract.js';

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

function capturingLogger(): { logger: pino.Logger; lines: LogLine[]; text(): string } {
  const raw: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void raw.push(line) });
  return {
    logger,
    get lines() {
      return raw.map((line) => JSON.parse(line) as LogLine);
    },
    text: () => raw.join(''),
  };
}

describe('parseStoreUrl', () => {
  it.each([
    'redis://localhost:6379',
    'redis://redis.internal',
    'redis://:s3cret@10.0.0.5:6380/2',
    'redis://gatehouse:s%40cret@redis.internal:6379/0',
    'rediss://gatehouse:s3cret@redis.example.com:6380',
    'redis://[::1]:6379',
  ])('reads %s as a standalone Redis, handing the URL to ioredis as it is', (url) => {
    expect(parseStoreUrl(url)).toStrictEqual({ mode: 'standalone', url });
  });

  it('reads a sentinel URL: sentinels, master name, password and db', () => {
    const url = 'redis-sentinel://:p%40ss%2Fword@s1.internal:26379,s2.internal:26380,[fd00::3]:26381/mymaster?db=3';
    expect(parseStoreUrl(url)).toStrictEqual({
      mode: 'sentinel',
      sentinels: [
        { host: 's1.internal', port: 26379 },
        { host: 's2.internal', port: 26380 },
        { host: 'fd00::3', port: 26381 },
      ],
      name: 'mymaster',
      password: 'p@ss/word',
      db: 3,
    });
  });

  it('reads a sentinel URL without credentials or db, defaulting the sentinel port', () => {
    expect(parseStoreUrl('redis-sentinel://s1,s2:5000/cache')).toStrictEqual({
      mode: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 5000 },
      ],
      name: 'cache',
    });
  });

  it('reads a user name (Redis ACL) in a sentinel URL', () => {
    expect(parseStoreUrl('redis-sentinel://gatehouse:pw@s1:26379/m')).toMatchObject({ username: 'gatehouse', password: 'pw' });
  });

  it('reads a cluster URL: nodes and password', () => {
    expect(parseStoreUrl('redis-cluster://:s3cret@n1.internal:7000,n2.internal:7001,10.0.0.9')).toStrictEqual({
      mode: 'cluster',
      nodes: [
        { host: 'n1.internal', port: 7000 },
        { host: 'n2.internal', port: 7001 },
        { host: '10.0.0.9', port: 6379 },
      ],
      password: 's3cret',
    });
  });

  it.each([
    ['tls=true', true],
    ['tls=1', true],
    ['tls=false', false],
  ])('reads ?%s of a cluster URL', (query, tls) => {
    expect(parseStoreUrl(`redis-cluster://n1:7000/?${query}`)).toStrictEqual({
      mode: 'cluster',
      nodes: [{ host: 'n1', port: 7000 }],
      tls,
    });
  });

  it.each([
    ['', /scheme/],
    ['localhost:6379', /scheme/],
    ['http://localhost:6379', /scheme/],
    ['redis://', /not a valid URL|host/],
    ['redis://localhost:notaport', /not a valid URL/],
    ['redis://localhost:6379/cache', /database number/],
    ['redis://:%zz@localhost:6379', /percent-encoding/],
    ['redis-sentinel://s1:26379', /master name/],
    ['redis-sentinel://s1:26379/', /master name/],
    ['redis-sentinel://s1:26379/a/b', /master name/],
    ['redis-sentinel:///mymaster', /host:port/],
    ['redis-sentinel://s1:26379/m?db=x', /db must be a database number/],
    ['redis-sentinel://s1:26379/m?timeout=5', /unknown parameter "timeout"/],
    ['redis-sentinel://:%E0%A4%A@s1:26379/m', /percent-encoding/],
    ['redis-cluster://', /host:port/],
    ['redis-cluster://n1:7000,,n2:7001', /"" is not a host:port/],
    ['redis-cluster://n1:99999', /is not a host:port/],
    ['redis-cluster://n1:0', /is not a host:port/],
    ['redis-cluster://n1:7000:7001', /is not a host:port/],
    ['redis-cluster://n1:7000/db', /no path/],
    ['redis-cluster://n1:7000?tls=maybe', /tls must be true or false/],
  ])('rejects %j with a clear error', (url, problem) => {
    expect(() => parseStoreUrl(url)).toThrow(/^invalid store URL/);
    expect(() => parseStoreUrl(url)).toThrow(problem);
  });

  it('never puts the password into its error message', () => {
    for (const url of ['redis-cluster://:hunter2@n1:99999', 'redis://:hunter2@host:port', 'redis://:hun/ter2@host:1']) {
      let message = '';
      try {
        parseStoreUrl(url);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/^invalid store URL/);
      expect(message).not.toContain('hunter2');
      expect(message).not.toContain('ter2');
    }
  });
});

describe('redactStoreUrl', () => {
  it.each([
    ['redis://localhost:6379', 'redis://localhost:6379'],
    ['redis://:pw@localhost:6379/1', 'redis://:***@localhost:6379/1'],
    ['rediss://user:pw@host:6380', 'rediss://user:***@host:6380'],
    ['redis://lonelysecret@host', 'redis://***@host'],
    [':pw@host:6379', ':***@host:6379'],
    ['redis-sentinel://:p@ss/w@s1:1,s2:2/m?db=1', 'redis-sentinel://:***@s1:1,s2:2/m?db=1'],
  ])('masks %s as %s', (url, redacted) => {
    expect(redactStoreUrl(url)).toBe(redacted);
  });
});

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

describe('createStore', () => {
  it('without a URL gives the memory store and warns that it is neither durable nor shared', async () => {
    const log = capturingLogger();
    const store = await createStore({ keyPrefix: 'gatehouse:' }, log.logger);
    try {
      expect(store).toBeInstanceOf(MemoryStore);
      expect(store.kind).toBe('memory');
      const warnings = log.lines.filter((line) => line.level === 40);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]?.msg).toMatch(/sessions and request statuses are neither durable .*nor shared between instances/);
    } finally {
      await store.close();
    }
  });

  it('starts even when Redis is down, logs that without the password, and answers 503 until it is back', async () => {
    const server = await startRedisServer();
    try {
      await server.stop();
      const log = capturingLogger();
      const url = server.url.replace('//', '//:top-secret@');
      const started = Date.now();
      const prefix = uniquePrefix();
      const store = await createStore({ url, keyPrefix: prefix }, log.logger);
      try {
        expect(Date.now() - started).toBeLessThan(4_000);
        expect(store.kind).toBe('redis');
        const failure = await store.ping().catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(GatehouseError);
        expect(failure).toMatchObject({ code: 'store_unavailable' });
        expect(log.lines.some((line) => line.level === 40 && /does not answer yet/.test(line.msg))).toBe(true);
        expect(log.text()).toContain(`redis://:***@127.0.0.1:${server.port}`);
        expect(log.text()).not.toContain('top-secret');

        await server.start();
        await expect.poll(() => store.ping().then(() => 'up', () => 'down'), { timeout: 10_000, interval: 100 }).toBe('up');

        // Redis was not there at start: the revocation subscription too must come up on its own.
        const heard: string[] = [];
        store.onSessionRevoked((sid) => heard.push(sid));
        const peer = await createStore({ url, keyPrefix: prefix }, pino({ level: 'silent' }));
        try {
          await expect
            .poll(
              async () => {
                const session = sessionRecord();
                await peer.createSession(session);
                await peer.revokeSession(session.sid);
                await sleep(100);
                return heard.includes(session.sid);
              },
              { timeout: 10_000, interval: 100 },
            )
            .toBe(true);
        } finally {
          await peer.close();
        }
      } finally {
        await store.close();
      }
    } finally {
      await server.close();
    }
  });
});
