import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { pino, type Logger } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { GatehouseError } from '../../src/http/errors.js';
import { createStore } from '../../src/store/create-store.js';
import { RedisStore } from '../../src/store/redis-store.js';
import type { Store } from '../../src/store/store.js';
import { startRedisServer, testRedisUrl, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';
import { describeStoreContract, sessionRecord } from './store-contract.js';

const silent = pino({ level: 'silent' });

function capturingLogger(lines: string[]): Logger {
  return pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
}

function expectStoreUnavailable(outcome: PromiseSettledResult<unknown>): void {
  expect(outcome.status).toBe('rejected');
  const error = (outcome as PromiseRejectedResult).reason as unknown;
  expect(error).toBeInstanceOf(GatehouseError);
  expect(error).toMatchObject({ code: 'store_unavailable', status: 503, headers: { 'Retry-After': '1' } });
  // The Redis error stays attached for the log, but only as the cause.
  expect((error as GatehouseError).cause).toBeInstanceOf(Error);
  expect((error as GatehouseError).cause).not.toBeInstanceOf(GatehouseError);
}

/** Every operation a request may make, at once. */
function everyOperation(store: Store, sid: string): Promise<PromiseSettledResult<unknown>[]> {
  return Promise.allSettled([
    store.getSession(sid),
    store.createSession(sessionRecord()),
    store.revokeSession(sid),
    store.ping(),
  ]);
}

describe('RedisStore', () => {
  let redis: { url: string; close(): Promise<void> };

  beforeAll(async () => {
    redis = await testRedisUrl();
  });

  afterAll(async () => {
    await redis?.close();
  });

  describeStoreContract('RedisStore', async () => {
    const config = { url: redis.url, keyPrefix: uniquePrefix() };
    const store = await createStore(config, silent);
    const peer = await createStore(config, silent);
    return {
      store,
      peer,
      cleanup: async () => {
        await Promise.all([store.close(), peer.close()]);
      },
    };
  });

  describe('on the wire', () => {
    let raw: Redis;
    let store: Store;
    let keyPrefix: string;

    beforeEach(async () => {
      raw = new Redis(redis.url);
      keyPrefix = uniquePrefix();
      store = await createStore({ url: redis.url, keyPrefix }, silent);
    });

    afterEach(async () => {
      await store.close();
      await raw.quit();
    });

    it('is a RedisStore of the redis kind', () => {
      expect(store).toBeInstanceOf(RedisStore);
      expect(store.kind).toBe('redis');
    });

    it('keeps a session as JSON under <prefix>session:{sid}, expiring at its expiresAt', async () => {
      const session = sessionRecord({ expiresAt: Date.now() + 30_000 });
      await store.createSession(session);
      const key = `${keyPrefix}session:{${session.sid}}`;
      expect(JSON.parse((await raw.get(key)) ?? 'null')).toStrictEqual(session);
      const ttlMs = await raw.pttl(key);
      const expectedTtlMs = session.expiresAt - Date.now();
      expect(ttlMs).toBeGreaterThan(expectedTtlMs - 1_000);
      expect(ttlMs).toBeLessThanOrEqual(expectedTtlMs + 50);
    });

    it('deletes the key on revocation and announces the sid on <prefix>revocations', async () => {
      const listener = raw.duplicate();
      try {
        const announced: Array<[string, string]> = [];
        listener.on('message', (channel: string, message: string) => announced.push([channel, message]));
        await listener.subscribe(`${keyPrefix}revocations`);
        const session = sessionRecord();
        await store.createSession(session);
        await store.revokeSession(session.sid);
        expect(await raw.exists(`${keyPrefix}session:{${session.sid}}`)).toBe(0);
        await vi.waitFor(() => expect(announced).toStrictEqual([[`${keyPrefix}revocations`, session.sid]]));
      } finally {
        await listener.quit();
      }
    });

    it('reads a record it did not write as no session', async () => {
      const sid = sessionRecord().sid;
      await raw.set(`${keyPrefix}session:{${sid}}`, 'not json', 'PX', 60_000);
      expect(await store.getSession(sid)).toBeNull();
      await raw.set(`${keyPrefix}session:{${sid}}`, JSON.stringify(sessionRecord()), 'PX', 60_000);
      expect(await store.getSession(sid)).toBeNull();
    });

    it('turns a reply error into store_unavailable', async () => {
      const sid = sessionRecord().sid;
      await raw.hset(`${keyPrefix}session:{${sid}}`, 'not', 'a string');
      expectStoreUnavailable((await Promise.allSettled([store.getSession(sid)]))[0]!);
    });
  });
});

// These stop, freeze and restart Redis, so they always run their own server,
// never the shared one of REDIS_URL.
describe('RedisStore when Redis fails', () => {
  let server: RedisServerHandle;
  let store: Store;
  let peer: Store;
  let logLines: string[];
  const unexpectedErrors: unknown[] = [];
  const recordUnexpected = (error: unknown): void => void unexpectedErrors.push(error);

  beforeAll(async () => {
    server = await startRedisServer();
    process.on('unhandledRejection', recordUnexpected);
    process.on('uncaughtException', recordUnexpected);
  });

  afterAll(async () => {
    process.off('unhandledRejection', recordUnexpected);
    process.off('uncaughtException', recordUnexpected);
    await server?.close();
  });

  beforeEach(async () => {
    logLines = [];
    const config = { url: server.url, keyPrefix: uniquePrefix() };
    store = await createStore(config, capturingLogger(logLines));
    peer = await createStore(config, silent);
  });

  afterEach(async () => {
    await server.resume();
    await server.start();
    await Promise.all([store.close(), peer.close()]);
    expect(unexpectedErrors).toStrictEqual([]);
  });

  it('answers store_unavailable within 4 s while Redis is down, and logs it without flooding', async () => {
    const session = sessionRecord();
    await store.createSession(session);
    await server.stop();

    // Right after the drop, and again once the client is busy reconnecting.
    for (const pauseMs of [0, 1_500]) {
      await sleep(pauseMs);
      const started = Date.now();
      const outcomes = await everyOperation(store, session.sid);
      expect(Date.now() - started).toBeLessThan(4_000);
      outcomes.forEach(expectStoreUnavailable);
    }

    const warnings = logLines.map((line) => JSON.parse(line) as { level: number; msg: string; connection?: string });
    const failing = warnings.filter((line) => line.level === 40 && line.msg.startsWith('Redis connection failing'));
    // Many reconnect attempts failed; each connection said so once.
    expect(failing.map((line) => line.connection).sort()).toStrictEqual(['commands', 'revocations']);
  });

  it('answers store_unavailable within ~3 s when Redis hangs without answering', async () => {
    const untouched = sessionRecord();
    await store.createSession(untouched);
    await server.pause();

    const started = Date.now();
    // (The frozen Redis still runs these commands once it wakes: a timed-out
    // write may yet take effect. Hence a session of their own.)
    const outcomes = await everyOperation(store, sessionRecord().sid);
    expect(Date.now() - started).toBeLessThan(3_500);
    outcomes.forEach(expectStoreUnavailable);

    await server.resume();
    await vi.waitFor(() => store.ping(), { timeout: 5_000, interval: 100 });
    expect(await store.getSession(untouched.sid)).toStrictEqual(untouched);
  });

  it('tells its listeners when the revocation feed resumes after an outage, and only then', async () => {
    let resumed = 0;
    peer.onRevocationFeedResumed(() => {
      resumed += 1;
    });
    await sleep(300);
    expect(resumed).toBe(0); // a first connection is no resumption
    await server.stop();
    await sleep(300);
    expect(resumed).toBe(0);
    await server.start();
    await vi.waitFor(() => expect(resumed).toBe(1), { timeout: 10_000, interval: 50 });
  });

  it('works again once Redis is back, and a peer hears revocations again (resubscribed)', async () => {
    await server.stop();
    expectStoreUnavailable((await Promise.allSettled([store.ping()]))[0]!);
    await server.start();

    await vi.waitFor(() => store.ping(), { timeout: 10_000, interval: 100 });
    const heardByPeer: string[] = [];
    peer.onSessionRevoked((sid) => heardByPeer.push(sid));
    // The peer's subscriber reconnects on its own schedule: try until it hears.
    await vi.waitFor(
      async () => {
        const session = sessionRecord();
        await store.createSession(session);
        expect(await peer.getSession(session.sid)).toStrictEqual(session);
        expect(await store.revokeSession(session.sid)).toBe(true);
        await vi.waitFor(() => expect(heardByPeer).toContain(session.sid), { timeout: 1_000, interval: 10 });
        expect(await peer.getSession(session.sid)).toBeNull();
      },
      { timeout: 15_000, interval: 250 },
    );
    expect(logLines.some((line) => line.includes('Redis connection recovered'))).toBe(true);
  });
});

describe('RedisStore with a password', () => {
  const password = 'right-secret';
  let server: RedisServerHandle;

  beforeAll(async () => {
    server = await startRedisServer({ args: ['--requirepass', password] });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('connects with the password of the URL', async () => {
    const store = await createStore({ url: server.url.replace('//', `//:${password}@`), keyPrefix: uniquePrefix() }, silent);
    try {
      await expect(store.ping()).resolves.toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('never shows a wrong password, neither in its log nor in the error a caller may log', async () => {
    const secret = 'wrong-secret-b7c1';
    const url = server.url.replace('//', `//:${secret}@`);
    const lines: string[] = [];
    const store = await createStore({ url, keyPrefix: uniquePrefix() }, capturingLogger(lines));
    try {
      const outcome = (await Promise.allSettled([store.ping()]))[0]!;
      expectStoreUnavailable(outcome);
      const error = (outcome as PromiseRejectedResult).reason as GatehouseError;
      expect(String(error.cause)).toContain('WRONGPASS');
      for (const serialize of [pino.stdSerializers.err, pino.stdSerializers.errWithCause]) {
        expect(JSON.stringify(serialize(error))).not.toContain(secret);
      }
      expect(lines.join('\n')).toContain(':***@');
      expect(lines.join('\n')).not.toContain(secret);
    } finally {
      await store.close();
    }
  });
});
