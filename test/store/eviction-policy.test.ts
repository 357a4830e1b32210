// A Redis that evicts keys when its memory is full (any maxmemory-policy but
// noeviction) silently drops sessions, request records, published keys and
// users. The gateway reads the policy of every master at start and after a
// reconnect and says so: a warning naming the policy and the fix, a
// readiness detail and a metric. A Redis that refuses CONFIG (as managed
// ones do) is said once, at info level, and the gateway runs on.
import { Cluster } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { readEvictionPolicies, readEvictionPoliciesAt } from '../../src/store/eviction-policy.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import type { LogEntry } from '../helpers/log-sink.js';
import { command } from '../helpers/redis-nodes.js';
import { startRedisServer, type RedisServerHandle } from '../helpers/redis-server.js';
import { startCluster, type RedisCluster } from '../helpers/redis-topology.js';

const servers: RedisServerHandle[] = [];
let gateway: TestGateway | undefined;

afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

async function redisWith(...args: string[]): Promise<RedisServerHandle> {
  const server = await startRedisServer({ args });
  servers.push(server);
  return server;
}

const evictionWarning = (entry: LogEntry) => entry.event === 'store_evicting';

async function readiness(gw: TestGateway): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${gw.adminUrl}/readyz`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** The readiness body's `storeEviction` check. */
const checkOf = (body: Record<string, unknown>) => (body.checks as Record<string, unknown>).storeEviction;

async function evictingGauge(gw: TestGateway): Promise<string[]> {
  const text = await (await fetch(`${gw.adminUrl}/metrics`)).text();
  return text.split('\n').filter((line) => line.startsWith('gatehouse_store_evicting{'));
}

describe('a Redis whose maxmemory-policy evicts keys', () => {
  it('is named at start with the fix, shown by readiness (still 200) and counted in gatehouse_store_evicting', async () => {
    const redis = await redisWith('--maxmemory-policy', 'allkeys-lru');
    gateway = await startTestGateway({ config: { store: { url: redis.url } } });
    const listening = gateway.logs.entries().findIndex((entry) => entry.msg === 'gatehouse listening');
    const warning = gateway.logs.entries().findIndex(evictionWarning);
    // Said at start, before the gateway takes traffic.
    expect(warning).toBeGreaterThanOrEqual(0);
    expect(warning).toBeLessThan(listening);
    const entry = gateway.logs.entries()[warning]!;
    expect(entry).toMatchObject({ level: 40, maxmemoryPolicy: 'allkeys-lru', master: `127.0.0.1:${redis.port}` });
    expect(String(entry.msg)).toContain('maxmemory-policy allkeys-lru');
    expect(String(entry.msg)).toContain('maxmemory-policy noeviction');

    const ready = await readiness(gateway);
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ready');
    expect(checkOf(ready.body)).toMatchObject({
      status: 'ok',
      evicting: [{ address: `127.0.0.1:${redis.port}`, policy: 'allkeys-lru' }],
      fix: expect.stringContaining('noeviction'),
    });
    expect(await evictingGauge(gateway)).toStrictEqual(['gatehouse_store_evicting{policy="allkeys-lru"} 1']);
  });

  it('volatile-* evicts too (sessions and records carry a TTL), and is read again after a reconnect', async () => {
    const redis = await redisWith('--maxmemory-policy', 'volatile-lru');
    gateway = await startTestGateway({ config: { store: { url: redis.url } } });
    expect(gateway.logs.entries().find(evictionWarning)).toMatchObject({ maxmemoryPolicy: 'volatile-lru' });

    // The operator fixes it; the gateway learns it at its next connection.
    await command(redis.port, 'CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    await command(redis.port, 'CLIENT', 'KILL', 'TYPE', 'normal');
    const gw = gateway;
    await vi.waitFor(async () => expect(checkOf((await readiness(gw)).body)).toStrictEqual({ status: 'ok', evicting: [] }), {
      timeout: 10_000,
      interval: 100,
    });
    expect(await evictingGauge(gw)).toStrictEqual(['gatehouse_store_evicting{policy="noeviction"} 0']);
  });
});

describe('a Redis that keeps every key (noeviction)', () => {
  it('gets no warning and no readiness detail; the gauge reads 0', async () => {
    const redis = await redisWith('--maxmemory-policy', 'noeviction');
    gateway = await startTestGateway({ config: { store: { url: redis.url } } });
    expect(gateway.logs.entries().filter((entry) => String(entry.event ?? '').startsWith('store_eviction'))).toStrictEqual([]);
    expect(gateway.logs.entries().filter(evictionWarning)).toStrictEqual([]);
    const ready = await readiness(gateway);
    expect(ready.status).toBe(200);
    expect(checkOf(ready.body)).toStrictEqual({ status: 'ok', evicting: [] });
    expect(await evictingGauge(gateway)).toStrictEqual(['gatehouse_store_evicting{policy="noeviction"} 0']);
  });
});

describe('a Redis that refuses CONFIG (as managed Redis services do)', () => {
  it('is said once at info level, shown as unknown by readiness, and the gateway runs', async () => {
    const redis = await redisWith('--rename-command', 'CONFIG', '');
    gateway = await startTestGateway({ config: { store: { url: redis.url } } });
    const said = gateway.logs.entries().filter((entry) => entry.event === 'store_eviction_unknown');
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ level: 30, master: `127.0.0.1:${redis.port}`, reply: expect.stringContaining('unknown command') });
    const ready = await readiness(gateway);
    expect(ready.status).toBe(200);
    expect(checkOf(ready.body)).toMatchObject({ evicting: [], unknown: [`127.0.0.1:${redis.port}`] });
  });
});

describe('readEvictionPolicies, for the command line', () => {
  it('reads a store URL: each master with its address, policy and whether it evicts', async () => {
    const redis = await redisWith('--maxmemory-policy', 'allkeys-random');
    await expect(readEvictionPoliciesAt(redis.url)).resolves.toStrictEqual([{ address: `127.0.0.1:${redis.port}`, policy: 'allkeys-random', evicts: true }]);
  });

  it('rejects when nothing answers at the URL', async () => {
    const redis = await redisWith();
    await redis.stop();
    await expect(readEvictionPoliciesAt(redis.url)).rejects.toThrow(/did not answer/);
  });

  describe('on a Redis Cluster', () => {
    let cluster: RedisCluster;
    let client: Cluster | undefined;

    beforeAll(async () => {
      cluster = await startCluster();
    }, 90_000);

    afterAll(async () => {
      client?.disconnect();
      await cluster?.close();
    });

    it('reads every master: one that evicts is named among those that do not', { timeout: 30_000 }, async () => {
      const masters = await cluster.masters();
      await command(masters[1]!.port, 'CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lfu');
      client = new Cluster(cluster.nodes);
      await new Promise((resolve) => client!.once('ready', resolve));
      const read = await readEvictionPolicies(client);
      expect(read.map(({ address }) => address).sort()).toStrictEqual(masters.map(({ port }) => `127.0.0.1:${port}`).sort());
      expect(read.filter(({ evicts }) => evicts)).toStrictEqual([{ address: `127.0.0.1:${masters[1]!.port}`, policy: 'allkeys-lfu', evicts: true }]);
    });
  });
});
