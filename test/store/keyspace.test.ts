// The names of the store's keys and channels are part of its data: a rename
// orphans whatever a running deployment holds under the old one. Each name is
// pinned here byte for byte as earlier versions wrote it, and each store-side
// module is seen writing where its name says, on a real Redis.
import { createHash } from 'node:crypto';
import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/create-store.js';
import { Keyspace } from '../../src/store/keyspace.js';
import { deleteLimiterCounters } from '../../src/store/limiter-counters.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { rateLimitersOf } from '../../src/store/rate-limiters.js';
import type { Store } from '../../src/store/store.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { requestRecord, sessionRecord } from './store-contract.js';

const silent = pino({ level: 'silent' });

describe('the keyspace', () => {
  const keys = new Keyspace('gatehouse:');

  it("puts the users' marker in the users' hash slot, whatever hash tag the prefix carries (one script reads both on Redis Cluster)", () => {
    // Not a prefix with a `}` outside a tag (`x:{}:`): no other key can share such a key's slot.
    for (const prefix of ['gatehouse:', '', '{gh}:', 'app:{tenant-1}:', 'odd{:']) {
      const named = new Keyspace(prefix);
      expect(calculateSlot(named.usersMarker), prefix).toBe(calculateSlot(named.users));
    }
  });

  it('names every key and channel as the deployed data has them', () => {
    expect(keys.session('5f0c9d7e-sid')).toBe('gatehouse:session:{5f0c9d7e-sid}');
    expect(keys.endedProviderSession('op-sid')).toBe('gatehouse:ended-session:{op-sid}');
    expect(keys.userSessions('u-0001')).toBe('gatehouse:user-sessions:{u-0001}');
    expect(keys.request('0b8e6c1a-id')).toBe('gatehouse:request:{0b8e6c1a-id}');
    expect(keys.apiKey('k7')).toBe('gatehouse:apikey:{k7}');
    expect(keys.userApiKeys('u-0001')).toBe('gatehouse:user-apikeys:{u-0001}');
    expect(keys.apiKeyLastUse('k7')).toBe('gatehouse:apikey-used:{k7}');
    expect(keys.introspection('q1w2e3')).toBe('gatehouse:introspection:q1w2e3');
    expect(keys.limiterPrefix('login-pair')).toBe('gatehouse:limits:login-pair');
    expect(keys.limiterCounter('login-pair', 'abc:203.0.113.7')).toBe('gatehouse:limits:login-pair:abc:203.0.113.7');
    expect(keys.limiterCounter('route:orders', '10.0.0.1')).toBe('gatehouse:limits:route:orders:10.0.0.1');
    expect(keys.revocationChannel).toBe('gatehouse:revocations');
    expect(keys.requestStatusChannel).toBe('gatehouse:request-status');
    expect(keys.keysChangedChannel).toBe('gatehouse:keys-changed');
    expect(keys.signingKeys).toBe('gatehouse:signing-keys');
    expect(keys.instances).toBe('gatehouse:instances');
    expect(keys.users).toBe('gatehouse:users');
    expect(keys.usersMarker).toBe('{gatehouse:users}:marker');
    expect(keys.usersChangedChannel).toBe('gatehouse:users-changed');
  });

  it('keeps the prefix exactly as configured, empty included', () => {
    expect(new Keyspace('').session('s')).toBe('session:{s}');
    expect(new Keyspace('tenant-a/').apiKey('k')).toBe('tenant-a/apikey:{k}');
  });

  it('leaves the memory store without shared parts: limits count in this process, API keys and introspection answers stay with their owners', async () => {
    const store: Store = new MemoryStore();
    try {
      expect(store.apiKeys).toBeUndefined();
      expect(store.introspectionAnswers).toBeUndefined();
      expect(rateLimitersOf(store).shared).toBe(false);
      const limiter = rateLimitersOf(store).create({ name: 'login-pair', points: 1, duration: 60, blockDuration: 0 });
      expect((await limiter.consume('x')).remainingPoints).toBe(0);
    } finally {
      await store.close();
    }
  });
});

describe('the Redis store writes under the keyspace', () => {
  let redis: { url: string; close(): Promise<void> };
  let raw: Redis;
  let store: Store;
  let prefix: string;

  beforeAll(async () => {
    redis = await testRedisUrl();
  });
  afterAll(async () => {
    await redis?.close();
  });
  beforeEach(async () => {
    prefix = uniquePrefix();
    raw = new Redis(redis.url);
    store = await createStore({ url: redis.url, keyPrefix: prefix }, silent);
  });
  afterEach(async () => {
    await store.close();
    await raw.quit();
  });

  it('sessions, ended provider sessions and request records', async () => {
    const session = sessionRecord({ sub: 'u-9' });
    const request = requestRecord();
    await store.createSession(session);
    await store.endProviderSession('op-session', Date.now() + 60_000);
    await store.createRequest(request, 60_000);
    expect(await raw.type(`${prefix}session:{${session.sid}}`)).toBe('hash');
    expect(await raw.type(`${prefix}user-sessions:{u-9}`)).toBe('zset');
    expect(await raw.get(`${prefix}ended-session:{op-session}`)).toBe('1');
    expect(await raw.type(`${prefix}request:{${request.id}}`)).toBe('hash');
  });

  it("users' API keys, their listing and last use", async () => {
    const records = store.apiKeys!;
    await records.add({ sub: 'u-9', username: 'ivy' }, 'k1', '{"id":"k1"}', Date.now() + 60_000);
    await records.noteUse('k1', 1_700_000_000_000, 60_000);
    expect(await raw.hgetall(`${prefix}apikey:{k1}`)).toStrictEqual({ sub: 'u-9', username: 'ivy', record: '{"id":"k1"}' });
    expect(await raw.pttl(`${prefix}apikey:{k1}`)).toBeGreaterThan(0);
    expect(await raw.smembers(`${prefix}user-apikeys:{u-9}`)).toStrictEqual(['k1']);
    expect(await raw.get(`${prefix}apikey-used:{k1}`)).toBe('1700000000000');
    expect(await records.find('k1')).toStrictEqual({ sub: 'u-9', record: '{"id":"k1"}' });
    expect(await records.lastUses(['k1', 'k2'])).toStrictEqual(new Map([['k1', 1_700_000_000_000]]));
    await records.remove('u-9', 'k1');
    expect(await raw.exists(`${prefix}apikey:{k1}`, `${prefix}user-apikeys:{u-9}`)).toBe(0);
  });

  it('introspection answers, by the digest of the token', async () => {
    const digest = createHash('sha256').update('a refresh token').digest('base64url');
    await store.introspectionAnswers!.set(digest, '{"active":false}', 60_000.5);
    expect(await raw.get(`${prefix}introspection:${digest}`)).toBe('{"active":false}');
    expect(await store.introspectionAnswers!.get(digest)).toBe('{"active":false}');
  });

  it('rate limiter counters, which the unlock command finds and deletes', async () => {
    const limiters = rateLimitersOf(store);
    expect(limiters.shared).toBe(true);
    const options = { points: 10, duration: 60, blockDuration: 0 };
    await limiters.create({ name: 'login-username', ...options }).consume('abc');
    await limiters.create({ name: 'login-pair', ...options }).consume('abc:203.0.113.7');
    await limiters.create({ name: 'login-pair', ...options }).consume('abd:203.0.113.7');
    expect(await raw.get(`${prefix}limits:login-username:abc`)).toBe('1');
    expect(await raw.get(`${prefix}limits:login-pair:abc:203.0.113.7`)).toBe('1');

    const deleted = await deleteLimiterCounters({ url: redis.url, keyPrefix: prefix }, [
      { name: 'login-username', key: 'abc' },
      { name: 'login-pair', keyStart: 'abc:' },
    ]);
    expect(deleted).toBe(2);
    expect(await raw.exists(`${prefix}limits:login-username:abc`, `${prefix}limits:login-pair:abc:203.0.113.7`)).toBe(0);
    // Another user's counter is not theirs to clear.
    expect(await raw.get(`${prefix}limits:login-pair:abd:203.0.113.7`)).toBe('1');
  });
});
