import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { GatehouseError } from '../../src/core/errors.js';
import { createStore } from '../../src/store/create-store.js';
import { ReconnectSchedule } from '../../src/store/reconnect-schedule.js';
import { createRedisClient } from '../../src/store/redis-client.js';
import { RedisStore } from '../../src/store/redis-store.js';
import type { RequestStatusChange, Store } from '../../src/store/store.js';
import { parseStoreUrl } from '../../src/store/store-url.js';
import { logSink, type LogSink } from '../helpers/log-sink.js';
import { startRedisServer, testRedisUrl, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';
import { requestRecord, sessionRecord } from './store-contract.js';

const silent = pino({ level: 'silent' });

/** A store_unavailable carrying a Retry-After of whole seconds (1 unless a reconnect attempt is waiting). */
function expectStoreUnavailable(outcome: PromiseSettledResult<unknown>, retryAfter: RegExp = /^[1-9]\d*$/): void {
  expect(outcome.status).toBe('rejected');
  const error = (outcome as PromiseRejectedResult).reason as unknown;
  expect(error).toBeInstanceOf(GatehouseError);
  expect(error).toMatchObject({ code: 'store_unavailable', status: 503, headers: { 'retry-after': expect.stringMatching(retryAfter) } });
  // The Redis error stays attached for the log, but only as the cause.
  expect((error as GatehouseError).cause).toBeInstanceOf(Error);
  expect((error as GatehouseError).cause).not.toBeInstanceOf(GatehouseError);
}

/** Every operation a request may make, at once. */
function everyOperation(store: Store, sid: string, requestId: string): Promise<PromiseSettledResult<unknown>[]> {
  return Promise.allSettled([
    store.getSession(sid),
    store.createSession(sessionRecord()),
    store.revokeSession(sid),
    store.createRequest(requestRecord(), 60_000),
    store.getRequest(requestId),
    store.transitionRequest(requestId, 'completed', 60_000),
    store.ping(),
  ]);
}

/** When Redis will drop a key (PEXPIRETIME, Redis 7), in epoch ms. */
async function expiresAt(raw: Redis, key: string): Promise<number> {
  return (await raw.call('PEXPIRETIME', key)) as number;
}

function warnings(log: LogSink, msg: string): Array<Record<string, unknown>> {
  return log.entries().filter((line) => line.level === 40 && String(line.msg).startsWith(msg));
}

describe('RedisStore', () => {
  let redis: { url: string; close(): Promise<void> };

  beforeAll(async () => {
    redis = await testRedisUrl();
  });

  afterAll(async () => {
    await redis?.close();
  });

  describe('on the wire', () => {
    let raw: Redis;
    let store: Store;
    let keyPrefix: string;
    let log: LogSink;

    beforeEach(async () => {
      raw = new Redis(redis.url);
      keyPrefix = uniquePrefix();
      log = logSink('debug');
      store = await createStore({ url: redis.url, keyPrefix }, log.logger);
    });

    afterEach(async () => {
      await store.close();
      await raw.quit();
    });

    const sessionKey = (sid: string) => `${keyPrefix}session:{${sid}}`;
    const requestKey = (id: string) => `${keyPrefix}request:{${id}}`;

    it('is a RedisStore of the redis kind', () => {
      expect(store).toBeInstanceOf(RedisStore);
      expect(store.kind).toBe('redis');
    });

    it('keeps a session as a hash under <prefix>session:{sid}, expiring at its expiresAt', async () => {
      const session = sessionRecord({ method: 'api_key', apiKeyId: 'k-7', expiresAt: Date.now() + 30_000.4 });
      await store.createSession(session);
      const key = sessionKey(session.sid);
      expect(await raw.type(key)).toBe('hash');
      expect(await raw.hgetall(key)).toStrictEqual({
        sub: session.sub,
        username: session.username,
        method: 'api_key',
        apiKeyId: 'k-7',
        createdAt: String(session.createdAt),
        expiresAt: String(session.expiresAt),
      });
      expect(await expiresAt(raw, key)).toBe(Math.ceil(session.expiresAt));
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
        expect(await raw.exists(sessionKey(session.sid))).toBe(0);
        await vi.waitFor(() => expect(announced).toStrictEqual([[`${keyPrefix}revocations`, session.sid]]));
      } finally {
        await listener.quit();
      }
    });

    it.each(['sub', 'username', 'method', 'createdAt', 'expiresAt'])('reads a session hash without %s as no session, and says so', async (field) => {
      const session = sessionRecord();
      await store.createSession(session);
      await raw.hdel(sessionKey(session.sid), field);
      expect(await store.getSession(session.sid)).toBeNull();
      expect(warnings(log, 'ignoring an unreadable session record')).toHaveLength(1);
    });

    it('reads a session it did not write as no session: unknown method, a number that is not one, another type', async () => {
      const sid = sessionRecord().sid;
      const key = sessionKey(sid);
      const valid = { sub: 'u-1', username: 'alice', method: 'pwd', createdAt: '1', expiresAt: String(Date.now() + 60_000) };
      for (const broken of [{ method: 'magic' }, { expiresAt: 'tomorrow' }, { expiresAt: '' }, { createdAt: '0x10' }]) {
        await raw.del(key);
        await raw.hset(key, { ...valid, ...broken });
        expect(await store.getSession(sid)).toBeNull();
      }
      // The JSON string of the format before hashes reads as no session, and fails nothing.
      await raw.set(key, JSON.stringify({ ...sessionRecord({ sid }) }), 'PX', 60_000);
      expect(await store.getSession(sid)).toBeNull();
      expect(await store.revokeSession(sid)).toBe(false);
      expect(warnings(log, 'ignoring an unreadable session record')).toHaveLength(5);
    });

    it('keeps a request record as a hash under <prefix>request:{id}, for its retention', async () => {
      const record = requestRecord({ statusUrl: 'https://orders.internal/status/9' });
      const before = Date.now();
      expect(await store.createRequest(record, 30_000)).toBe(true);
      const after = Date.now();
      const key = requestKey(record.id);
      expect(await raw.hgetall(key)).toStrictEqual({
        status: 'pending',
        sub: record.sub,
        route: record.route,
        upstream: record.upstream,
        statusUrl: record.statusUrl,
        createdAt: String(record.createdAt),
        updatedAt: String(record.updatedAt),
      });
      const expiry = await expiresAt(raw, key);
      expect(expiry).toBeGreaterThanOrEqual(before + 30_000);
      expect(expiry).toBeLessThanOrEqual(after + 30_000);
    });

    it('leaves an existing key alone when a record with its id is created (NX), expiry included', async () => {
      const record = requestRecord();
      const key = requestKey(record.id);
      await raw.set(key, 'someone else', 'PX', 5_000);
      const expiry = await expiresAt(raw, key);
      expect(await store.createRequest(record, 60_000)).toBe(false);
      expect(await raw.get(key)).toBe('someone else');
      expect(await expiresAt(raw, key)).toBe(expiry);
    });

    it('changes only status and updatedAt in a transition, and keeps the record for the transition retention', async () => {
      const record = requestRecord({ createdAt: Number.MAX_SAFE_INTEGER - 10, updatedAt: Number.MAX_SAFE_INTEGER - 10 });
      await store.createRequest(record, 5_000);
      const key = requestKey(record.id);
      const created = await raw.hgetall(key);
      const at = Number.MAX_SAFE_INTEGER - 2;
      const before = Date.now();
      expect(await store.transitionRequest(record.id, 'failed', 90_000, at)).toBe('applied');
      const after = Date.now();
      const transitioned = await raw.hgetall(key);
      // Integers written in full, not 9.007199254741e+15.
      expect(transitioned).toStrictEqual({ ...created, status: 'failed', updatedAt: '9007199254740989' });
      const expiry = await expiresAt(raw, key);
      expect(expiry).toBeGreaterThanOrEqual(before + 90_000);
      expect(expiry).toBeLessThanOrEqual(after + 90_000);

      // A refused or repeated transition leaves the hash and its expiry as they were.
      await raw.pexpire(key, 20_000);
      const shortened = await expiresAt(raw, key);
      expect(await store.transitionRequest(record.id, 'completed', 90_000)).toBe('conflict');
      expect(await store.transitionRequest(record.id, 'failed', 90_000)).toBe('already_applied');
      expect(await raw.hgetall(key)).toStrictEqual(transitioned);
      expect(await expiresAt(raw, key)).toBe(shortened);
    });

    it('announces an applied transition as {id,status} JSON on <prefix>request-status, and nothing else', async () => {
      const listener = raw.duplicate();
      try {
        const announced: Array<[string, string]> = [];
        listener.on('message', (channel: string, message: string) => announced.push([channel, message]));
        await listener.subscribe(`${keyPrefix}request-status`);
        const record = requestRecord();
        await store.createRequest(record, 60_000);
        expect(await store.transitionRequest(record.id, 'completed', 60_000)).toBe('applied');
        expect(await store.transitionRequest(record.id, 'completed', 60_000)).toBe('already_applied');
        expect(await store.transitionRequest(record.id, 'failed', 60_000)).toBe('conflict');
        expect(await store.transitionRequest(requestRecord().id, 'failed', 60_000)).toBe('not_found');
        const marker = requestRecord();
        await store.createRequest(marker, 60_000);
        expect(await store.transitionRequest(marker.id, 'failed', 60_000)).toBe('applied');
        await vi.waitFor(() => expect(announced).toHaveLength(2));
        expect(announced.map(([channel]) => channel)).toStrictEqual([`${keyPrefix}request-status`, `${keyPrefix}request-status`]);
        expect(announced.map(([, message]) => JSON.parse(message) as unknown)).toStrictEqual([
          { id: record.id, status: 'completed' },
          { id: marker.id, status: 'failed' },
        ]);
      } finally {
        await listener.quit();
      }
    });

    it.each(['status', 'sub', 'route', 'upstream', 'createdAt', 'updatedAt'])(
      'reads a request hash without %s as no record, transitions nothing, and leaves it alone',
      async (field) => {
        const record = requestRecord();
        await store.createRequest(record, 60_000);
        const key = requestKey(record.id);
        await raw.hdel(key, field);
        const partial = await raw.hgetall(key);
        expect(await store.getRequest(record.id)).toBeNull();
        expect(await store.transitionRequest(record.id, 'completed', 60_000)).toBe('not_found');
        expect(await raw.hgetall(key)).toStrictEqual(partial);
      },
    );

    it('reads a request record it did not write as no record, transitions nothing, and leaves it alone', async () => {
      const id = requestRecord().id;
      const key = requestKey(id);
      const valid = { status: 'pending', sub: 'u-1', route: 'orders', upstream: 'http://orders', createdAt: '1', updatedAt: '2' };
      for (const broken of [{ status: 'lost' }, { createdAt: '2024-01-01' }, { updatedAt: '' }, { updatedAt: ' 2' }, { createdAt: '1e' }]) {
        await raw.del(key);
        await raw.hset(key, { ...valid, ...broken });
        expect(await store.getRequest(id)).toBeNull();
        expect(await store.transitionRequest(id, 'completed', 60_000)).toBe('not_found');
        expect(await raw.hgetall(key)).toStrictEqual({ ...valid, ...broken });
      }
      // The JSON string of the format before hashes, or any other type.
      for (const value of ['not json', JSON.stringify(requestRecord({ id }))]) {
        await raw.set(key, value, 'PX', 60_000);
        expect(await store.getRequest(id)).toBeNull();
        expect(await store.transitionRequest(id, 'completed', 60_000)).toBe('not_found');
        expect(await raw.get(key)).toBe(value);
      }
      await raw.del(key);
      await raw.rpush(key, 'a list');
      expect(await store.getRequest(id)).toBeNull();
      expect(await store.transitionRequest(id, 'failed', 60_000)).toBe('not_found');
    });

    it('loads its scripts again when Redis lost them (SCRIPT FLUSH)', async () => {
      const first = requestRecord();
      await store.createRequest(first, 60_000);
      expect(await store.transitionRequest(first.id, 'completed', 60_000)).toBe('applied');
      await raw.script('FLUSH');
      const session = sessionRecord();
      await store.createSession(session);
      expect(await store.getSession(session.sid)).toStrictEqual(session);
      expect(await store.revokeSession(session.sid)).toBe(true);
      const second = requestRecord();
      expect(await store.createRequest(second, 60_000)).toBe(true);
      expect(await store.transitionRequest(second.id, 'completed', 60_000)).toBe('applied');
      expect((await store.getRequest(second.id))?.status).toBe('completed');
    });

    it('rejects what Redis cannot keep exactly as a programming error, storing nothing', async () => {
      const record = requestRecord();
      for (const retentionMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
        await expect(store.createRequest(record, retentionMs)).rejects.toBeInstanceOf(RangeError);
      }
      await expect(store.createRequest({ ...record, createdAt: Number.NaN }, 60_000)).rejects.toBeInstanceOf(RangeError);
      expect(await raw.exists(requestKey(record.id))).toBe(0);
      const session = sessionRecord({ createdAt: Number.POSITIVE_INFINITY });
      await expect(store.createSession(session)).rejects.toBeInstanceOf(RangeError);
      expect(await raw.exists(sessionKey(session.sid))).toBe(0);

      await store.createRequest(record, 60_000);
      await expect(store.transitionRequest(record.id, 'completed', 0)).rejects.toBeInstanceOf(RangeError);
      await expect(store.transitionRequest(record.id, 'completed', 60_000, Number.NaN)).rejects.toBeInstanceOf(RangeError);
      expect((await store.getRequest(record.id))?.status).toBe('pending');
    });

    it('ignores malformed announcements on <prefix>request-status, logging them at debug', async () => {
      const heard: RequestStatusChange[] = [];
      store.onRequestStatusChanged((change) => heard.push(change));
      const channel = `${keyPrefix}request-status`;
      const malformed = [
        'not json',
        'null',
        '[]',
        '"completed"',
        '{"status":"completed"}',
        '{"id":"","status":"failed"}',
        '{"id":42,"status":"failed"}',
        '{"id":"r-1","status":"pending"}',
        '{"id":"r-1","status":"done"}',
      ];
      for (const message of malformed) await raw.publish(channel, message);
      // Extra fields of a valid announcement are dropped.
      await raw.publish(channel, '{"id":"r-2","status":"failed","extra":true}');
      await vi.waitFor(() => expect(heard).toHaveLength(1));
      expect(heard).toStrictEqual([{ id: 'r-2', status: 'failed' }]);
      const ignored = log.entries().filter((line) => line.msg === 'ignoring a malformed request status announcement');
      expect(ignored).toHaveLength(malformed.length);
      expect(ignored.every((line) => line.level === 20)).toBe(true);
    });
  });
});

// These stop, freeze and restart Redis, so they always run their own server,
// never the shared one of REDIS_URL.
describe('RedisStore when Redis fails', () => {
  let server: RedisServerHandle;
  let store: Store;
  let peer: Store;
  let log: LogSink;
  let peerLog: LogSink;
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
    log = logSink('debug');
    peerLog = logSink('debug');
    const config = { url: server.url, keyPrefix: uniquePrefix() };
    store = await createStore(config, log.logger);
    peer = await createStore(config, peerLog.logger);
  });

  afterEach(async () => {
    await server.resume();
    await server.start();
    await Promise.all([store.close(), peer.close()]);
    expect(unexpectedErrors).toStrictEqual([]);
  });

  /** Resolves once a connection of the store has seen Redis go and is trying to reconnect. */
  async function failing(sink: LogSink, connection: 'commands' | 'subscriber'): Promise<void> {
    await vi.waitFor(() => expect(warnings(sink, 'Redis connection failing').map((line) => line.connection)).toContain(connection), { timeout: 5_000 });
  }

  it('answers store_unavailable while Redis is down, and logs it without flooding', { timeout: 15_000 }, async () => {
    const session = sessionRecord();
    await store.createSession(session);
    const request = requestRecord();
    await store.createRequest(request, 60_000);
    await server.stop();

    // Right after the drop, and again once the client is busy reconnecting.
    (await everyOperation(store, session.sid, request.id)).forEach((outcome) => expectStoreUnavailable(outcome));
    await failing(log, 'commands');
    (await everyOperation(store, session.sid, request.id)).forEach((outcome) => expectStoreUnavailable(outcome));

    // Many reconnect attempts failed; each connection said so once.
    expect(
      warnings(log, 'Redis connection failing')
        .map((line) => line.connection)
        .sort(),
    ).toStrictEqual(['commands', 'subscriber']);
  });

  it('answers store_unavailable when Redis hangs without answering, with the least Retry-After', { timeout: 15_000 }, async () => {
    const untouched = sessionRecord();
    await store.createSession(untouched);
    const untouchedRequest = requestRecord();
    await store.createRequest(untouchedRequest, 60_000);
    await server.pause();

    // (The frozen Redis still runs these commands once it wakes: a timed-out
    // write may yet take effect. Hence a session and a request of their own.)
    // The connection stays up, so no reconnect attempt is waiting: 1 s.
    const outcomes = await everyOperation(store, sessionRecord().sid, requestRecord().id);
    outcomes.forEach((outcome) => expectStoreUnavailable(outcome, /^1$/));

    await server.resume();
    await vi.waitFor(() => store.ping(), { timeout: 5_000, interval: 100 });
    expect(await store.getSession(untouched.sid)).toStrictEqual(untouched);
    expect(await store.getRequest(untouchedRequest.id)).toStrictEqual(untouchedRequest);
  });

  it("gives its 503s the time until the client's next reconnect attempt as Retry-After", async () => {
    // A client that waits 10 s between attempts: a retry sooner finds nothing changed.
    const reconnects = new ReconnectSchedule({ delayMs: () => 10_000 });
    const slow = new RedisStore(createRedisClient(parseStoreUrl(server.url), reconnects), {
      keyPrefix: uniquePrefix(),
      logger: silent,
      reconnects,
      operationTimeoutMs: 200,
    });
    try {
      // Connected first (each try has only 200 ms).
      await vi.waitFor(() => slow.ping(), { timeout: 5_000, interval: 50 });
      await server.stop();
      await vi.waitFor(() => expect(reconnects.msUntilNextAttempt()).toBeGreaterThan(0), { timeout: 5_000 });
      const [outcome] = await Promise.allSettled([slow.ping()]);
      expectStoreUnavailable(outcome!, /^([5-9]|10)$/);
    } finally {
      await slow.close();
    }
  });

  it('turns a reply error into store_unavailable', async () => {
    const raw = new Redis(server.url);
    try {
      // Every command of the store refused (NOPERM), though Redis answers.
      await raw.call('ACL', 'SETUSER', 'default', '-hgetall', '-evalsha', '-eval');
      const outcomes = await everyOperation(store, sessionRecord().sid, requestRecord().id);
      outcomes.slice(0, -1).forEach((outcome) => expectStoreUnavailable(outcome));
      expect(String(((outcomes[0] as PromiseRejectedResult).reason as GatehouseError).cause)).toMatch(/NOPERM/);
    } finally {
      await raw.call('ACL', 'SETUSER', 'default', '+@all');
      await raw.quit();
    }
  });

  it('tells its listeners when the revocation feed resumes after an outage, and only then', async () => {
    let resumed = 0;
    peer.onRevocationFeedResumed(() => {
      resumed += 1;
    });
    // createStore waited for the first subscription: a first connection is no resumption.
    expect(resumed).toBe(0);
    await server.stop();
    await failing(peerLog, 'subscriber');
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
    // Request status changes too (the scripts are loaded afresh on the new connection).
    const statusHeardByPeer: RequestStatusChange[] = [];
    peer.onRequestStatusChanged((change) => statusHeardByPeer.push(change));
    const request = requestRecord();
    expect(await store.createRequest(request, 60_000)).toBe(true);
    expect(await store.transitionRequest(request.id, 'failed', 60_000)).toBe('applied');
    await vi.waitFor(() => expect(statusHeardByPeer).toContainEqual({ id: request.id, status: 'failed' }), {
      timeout: 1_000,
      interval: 10,
    });
    expect((await peer.getRequest(request.id))?.status).toBe('failed');
    expect(log.text()).toContain('Redis connection recovered');
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
    const log = logSink('debug');
    const store = await createStore({ url, keyPrefix: uniquePrefix() }, log.logger);
    try {
      const outcome = (await Promise.allSettled([store.ping()]))[0]!;
      expectStoreUnavailable(outcome);
      const error = (outcome as PromiseRejectedResult).reason as GatehouseError;
      expect(String(error.cause)).toContain('WRONGPASS');
      for (const serialize of [pino.stdSerializers.err, pino.stdSerializers.errWithCause]) {
        expect(JSON.stringify(serialize(error))).not.toContain(secret);
      }
      expect(log.text()).toContain(':***@');
      expect(log.text()).not.toContain(secret);
    } finally {
      await store.close();
    }
  });
});
