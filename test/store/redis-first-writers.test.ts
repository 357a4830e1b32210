// The replay memory's writes on a real Redis and a real Cluster: each key answered as its own SET NX, the keys of
// one turn in one script call, the next ones gathered while a call is out, a failed call refusing each of its keys,
// and a Cluster's keys split by slot (one call with keys of two slots is refused: CROSSSLOT).
import { setImmediate as nextTurn } from 'node:timers/promises';
import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withinDeadline } from '../../src/core/deadline.js';
import { createRedisClient, type RedisClient } from '../../src/store/redis-client.js';
import { MAX_KEYS_PER_CALL, RedisFirstWriters } from '../../src/store/redis-first-writers.js';
import { storeUnavailable } from '../../src/store/store-unavailable.js';
import { parseStoreUrl } from '../../src/store/store-url.js';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';
import { startCluster, type RedisCluster } from '../helpers/redis-topology.js';

/** As the store runs each call: under a deadline, failures as `store_unavailable`. */
const runWithin =
  (ms: number) =>
  <T>(operation: () => Promise<T>): Promise<T> =>
    withinDeadline(operation(), ms).catch((error: unknown) => {
      throw storeUnavailable(error);
    });

/** How many script calls Redis has run (EVALSHA, and EVAL when the script was not loaded yet). */
async function scriptCalls(raw: Redis): Promise<number> {
  const stats = await raw.info('commandstats');
  let calls = 0;
  for (const match of stats.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(match[1]);
  return calls;
}

describe('on one Redis', () => {
  let server: RedisServerHandle;
  let client: RedisClient;
  let raw: Redis;
  let writers: RedisFirstWriters;

  beforeAll(async () => {
    server = await startRedisServer();
    client = createRedisClient(parseStoreUrl(server.url));
    client.on('error', () => {});
    raw = new Redis(server.url);
    writers = new RedisFirstWriters(client, runWithin(1_000));
  });
  afterAll(async () => {
    client?.disconnect();
    raw?.disconnect();
    await server?.close();
  });

  it('answers each key as SET NX does, and keeps it for its lifetime', async () => {
    const key = `${uniquePrefix()}proof`;
    expect(await writers.claim(key, 60_000)).toBe(true);
    expect(await writers.claim(key, 60_000)).toBe(false);
    const ttl = await raw.pttl(key);
    expect(ttl).toBeGreaterThan(59_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('lets exactly one of the same key asked in one turn win', async () => {
    const key = `${uniquePrefix()}race`;
    const answers = await Promise.all(Array.from({ length: 8 }, () => writers.claim(key, 60_000)));
    expect(answers.filter(Boolean)).toHaveLength(1);
  });

  it('sends the keys asked in one turn as one script call', async () => {
    const prefix = uniquePrefix();
    await writers.claim(`${prefix}warm`, 60_000); // the script is loaded: one EVALSHA from here on
    const before = await scriptCalls(raw);
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => writers.claim(`${prefix}${i}`, 60_000)));
    expect(answers.every(Boolean)).toBe(true);
    expect((await scriptCalls(raw)) - before).toBe(1);
  });

  it('gathers the keys asked while a call is out into the next call', async () => {
    const prefix = uniquePrefix();
    await writers.claim(`${prefix}warm`, 60_000);
    const before = await scriptCalls(raw);
    await server.pause();
    try {
      const first = writers.claim(`${prefix}first`, 60_000);
      await nextTurn(); // the first call is out, unanswered
      const later = [writers.claim(`${prefix}second`, 60_000)];
      await nextTurn();
      later.push(writers.claim(`${prefix}third`, 60_000));
      await nextTurn();
      await server.resume();
      expect(await Promise.all([first, ...later])).toEqual([true, true, true]);
    } finally {
      await server.resume();
    }
    expect((await scriptCalls(raw)) - before).toBe(2);
  });

  it('sends at most MAX_KEYS_PER_CALL keys a call, and the rest after it', async () => {
    const prefix = uniquePrefix();
    await writers.claim(`${prefix}warm`, 60_000);
    const before = await scriptCalls(raw);
    const answers = await Promise.all(Array.from({ length: MAX_KEYS_PER_CALL + 1 }, (_, i) => writers.claim(`${prefix}${i}`, 60_000)));
    expect(answers.every(Boolean)).toBe(true);
    expect((await scriptCalls(raw)) - before).toBe(2);
  });

  it('refuses every key of a call Redis does not answer in time with store_unavailable, and answers the next call', async () => {
    const prefix = uniquePrefix();
    const impatient = new RedisFirstWriters(client, runWithin(100));
    await server.pause();
    let refusals: PromiseSettledResult<boolean>[];
    try {
      refusals = await Promise.allSettled([impatient.claim(`${prefix}a`, 60_000), impatient.claim(`${prefix}b`, 60_000)]);
    } finally {
      await server.resume();
    }
    for (const refusal of refusals) expect(refusal).toMatchObject({ status: 'rejected', reason: { code: 'store_unavailable', status: 503 } });
    // The unanswered call reaches Redis once it runs again: its keys may be written, as a timed-out SET may be.
    expect(await impatient.claim(`${prefix}c`, 60_000)).toBe(true);
  });

  it('groups by lifetime: keys of two lifetimes keep their own', async () => {
    const prefix = uniquePrefix();
    const [short, long] = [`${prefix}short`, `${prefix}long`];
    expect(await Promise.all([writers.claim(short, 5_000), writers.claim(long, 600_000)])).toEqual([true, true]);
    expect(await raw.pttl(short)).toBeLessThanOrEqual(5_000);
    expect(await raw.pttl(long)).toBeGreaterThan(5_000);
  });
});

describe('on a Cluster', () => {
  let cluster: RedisCluster;
  let client: RedisClient;

  beforeAll(async () => {
    cluster = await startCluster(0);
    client = createRedisClient(parseStoreUrl(`redis-cluster://${cluster.nodes.map((node) => `${node.host}:${node.port}`).join(',')}`));
    client.on('error', () => {});
  }, 120_000);
  afterAll(async () => {
    client?.disconnect();
    await cluster?.close();
  });

  it('writes keys of many slots asked in one turn, each slot in calls of its own', async () => {
    const prefix = uniquePrefix();
    const keys = Array.from({ length: 60 }, (_, i) => `${prefix}${i}`);
    expect(new Set(keys.map((key) => calculateSlot(key))).size).toBeGreaterThan(1);
    const writers = new RedisFirstWriters(client, runWithin(2_000));
    expect((await Promise.all(keys.map((key) => writers.claim(key, 60_000)))).every(Boolean)).toBe(true);
    expect((await Promise.all(keys.map((key) => writers.claim(key, 60_000)))).some(Boolean)).toBe(false);
  });
});
