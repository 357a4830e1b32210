import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { pino, type Logger } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { GatehouseError } from '../../src/http/errors.js';
import { createStore } from '../../src/store/create-store.js';
import { RedisStore } from '../../src/store/redis-store.js';
import type { RequestStatusChange, Store } from '../../src/store/store.js';
import { startRedisServer, testRedisUrl, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';
import { describeStoreContract, requestRecord, sessionRecord } from './store-contract.js';

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

      // WRONGTYPE from GET, and from the GET inside the transition script.
      const id = requestRecord().id;
      await raw.hset(`${keyPrefix}request:{${id}}`, 'not', 'a string');
      const outcomes = await Promise.allSettled([store.getRequest(id), store.transitionRequest(id, 'completed', 60_000)]);
      outcomes.forEach(expectStoreUnavailable);
    });

    it('keeps a request record as JSON under <prefix>request:{id}, for its retention', async () => {
      const record = requestRecord({ statusUrl: 'https://orders.internal/status/9' });
      expect(await store.createRequest(record, 30_000)).toBe(true);
      const key = `${keyPrefix}request:{${record.id}}`;
      expect(JSON.parse((await raw.get(key)) ?? 'null')).toStrictEqual(record);
      const ttlMs = await raw.pttl(key);
      expect(ttlMs).toBeGreaterThan(29_000);
      expect(ttlMs).toBeLessThanOrEqual(30_000);
    });

    it('leaves an existing key alone when a record with its id is created (NX), TTL included', async () => {
      const record = requestRecord();
      const key = `${keyPrefix}request:{${record.id}}`;
      await raw.set(key, 'someone else', 'PX', 5_000);
      expect(await store.createRequest(record, 60_000)).toBe(false);
      expect(await raw.get(key)).toBe('someone else');
      expect(await raw.pttl(key)).toBeLessThanOrEqual(5_000);
    });

    it('rewrites the record with the new status and the transition retention, integers written in full', async () => {
      const record = requestRecord({ createdAt: Number.MAX_SAFE_INTEGER - 10, updatedAt: Number.MAX_SAFE_INTEGER - 10 });
      await store.createRequest(record, 5_000);
      const at = Number.MAX_SAFE_INTEGER - 2;
      expect(await store.transitionRequest(record.id, 'failed', 90_000, at)).toBe('applied');
      const key = `${keyPrefix}request:{${record.id}}`;
      const json = (await raw.get(key)) ?? 'null';
      expect(JSON.parse(json)).toStrictEqual({ ...record, status: 'failed', updatedAt: at });
      // Written as plain integers, not 9.007199254741e+15.
      expect(json).toMatch(new RegExp(`"createdAt":${record.createdAt}[,}]`));
      expect(json).toMatch(new RegExp(`"updatedAt":${at}[,}]`));
      const ttlMs = await raw.pttl(key);
      expect(ttlMs).toBeGreaterThan(89_000);
      expect(ttlMs).toBeLessThanOrEqual(90_000);

      // A refused or repeated transition leaves value and TTL as they were.
      await raw.pexpire(key, 20_000);
      expect(await store.transitionRequest(record.id, 'completed', 90_000)).toBe('conflict');
      expect(await store.transitionRequest(record.id, 'failed', 90_000)).toBe('already_applied');
      expect(await raw.get(key)).toBe(json);
      expect(await raw.pttl(key)).toBeLessThanOrEqual(20_000);
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

    it('reads a request record it did not write as no record, and leaves it alone', async () => {
      const id = requestRecord().id;
      const key = `${keyPrefix}request:{${id}}`;
      for (const value of [
        'not json',
        '[]',
        JSON.stringify(requestRecord()), // another id
        JSON.stringify({ ...requestRecord({ id }), status: 'lost' }),
        JSON.stringify({ ...requestRecord({ id }), createdAt: '2024-01-01' }),
      ]) {
        await raw.set(key, value, 'PX', 60_000);
        expect(await store.getRequest(id)).toBeNull();
      }
      for (const value of ['not json', '[]', '{"status":{"nested":true}}']) {
        await raw.set(key, value, 'PX', 60_000);
        expect(await store.transitionRequest(id, 'completed', 60_000)).toBe('not_found');
        expect(await raw.get(key)).toBe(value);
      }
    });

    it('loads its script again when Redis lost it (SCRIPT FLUSH)', async () => {
      const first = requestRecord();
      await store.createRequest(first, 60_000);
      expect(await store.transitionRequest(first.id, 'completed', 60_000)).toBe('applied');
      await raw.script('FLUSH');
      const second = requestRecord();
      await store.createRequest(second, 60_000);
      expect(await store.transitionRequest(second.id, 'completed', 60_000)).toBe('applied');
      expect((await store.getRequest(second.id))?.status).toBe('completed');
    });

    it('rejects a retention Redis cannot keep as a programming error, storing nothing', async () => {
      const record = requestRecord();
      for (const retentionMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
        await expect(store.createRequest(record, retentionMs)).rejects.toBeInstanceOf(RangeError);
      }
      expect(await raw.exists(`${keyPrefix}request:{${record.id}}`)).toBe(0);
      await store.createRequest(record, 60_000);
      await expect(store.transitionRequest(record.id, 'completed', 0)).rejects.toBeInstanceOf(RangeError);
      expect((await store.getRequest(record.id))?.status).toBe('pending');
    });

    it('ignores malformed announcements on <prefix>request-status, logging them at debug', async () => {
      const lines: string[] = [];
      const logged = await createStore({ url: redis.url, keyPrefix }, capturingLogger(lines));
      try {
        const heard: RequestStatusChange[] = [];
        logged.onRequestStatusChanged((change) => heard.push(change));
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
        const ignored = lines
          .map((line) => JSON.parse(line) as { level: number; msg: string })
          .filter((line) => line.msg === 'ignoring a malformed request status announcement');
        expect(ignored).toHaveLength(malformed.length);
        expect(ignored.every((line) => line.level === 20)).toBe(true);
      } finally {
        await logged.close();
      }
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
    const request = requestRecord();
    await store.createRequest(request, 60_000);
    await server.stop();

    // Right after the drop, and again once the client is busy reconnecting.
    for (const pauseMs of [0, 1_500]) {
      await sleep(pauseMs);
      const started = Date.now();
      const outcomes = await everyOperation(store, session.sid, request.id);
      expect(Date.now() - started).toBeLessThan(4_000);
      outcomes.forEach(expectStoreUnavailable);
    }

    const warnings = logLines.map((line) => JSON.parse(line) as { level: number; msg: string; connection?: string });
    const failing = warnings.filter((line) => line.level === 40 && line.msg.startsWith('Redis connection failing'));
    // Many reconnect attempts failed; each connection said so once.
    expect(failing.map((line) => line.connection).sort()).toStrictEqual(['commands', 'subscriber']);
  });

  it('answers store_unavailable within ~3 s when Redis hangs without answering', async () => {
    const untouched = sessionRecord();
    await store.createSession(untouched);
    const untouchedRequest = requestRecord();
    await store.createRequest(untouchedRequest, 60_000);
    await server.pause();

    const started = Date.now();
    // (The frozen Redis still runs these commands once it wakes: a timed-out
    // write may yet take effect. Hence a session and a request of their own.)
    const outcomes = await everyOperation(store, sessionRecord().sid, requestRecord().id);
    expect(Date.now() - started).toBeLessThan(3_500);
    outcomes.forEach(expectStoreUnavailable);

    await server.resume();
    await vi.waitFor(() => store.ping(), { timeout: 5_000, interval: 100 });
    expect(await store.getSession(untouched.sid)).toStrictEqual(untouched);
    expect(await store.getRequest(untouchedRequest.id)).toStrictEqual(untouchedRequest);
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
    // Request status changes too (the script is loaded afresh on the new connection).
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
