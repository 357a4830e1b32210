// The client's own connections to the sentinels (ioredis's failover detector subscribes to +switch-master on each)
// have a listener: a sentinel that goes away while the gateway runs, as one does on every restart, is not printed to
// stderr as "[ioredis] Unhandled error event" with a stack at every reconnect attempt, outside the log.
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { createRedisClient, type RedisClient } from '../../src/store/redis-client.js';
import { parseStoreUrl } from '../../src/store/store-url.js';
import { startSentinelSet, type SentinelSet } from '../helpers/redis-topology.js';

let set: SentinelSet;
let client: RedisClient | undefined;
beforeAll(async () => {
  set = await startSentinelSet();
}, 60_000);
afterAll(async () => {
  client?.disconnect();
  await set?.close();
});

it("keeps a killed sentinel's connection errors off stderr, and the client answers on", async () => {
  const printed = vi.spyOn(console, 'error');
  try {
    client = createRedisClient(parseStoreUrl(`redis-sentinel://${set.sentinels.map(({ host, port }) => `${host}:${port}`).join(',')}/${set.masterName}`));
    client.on('error', () => {});
    expect(await client.ping()).toBe('PONG');
    // The last process started is the third sentinel (master, replica, then the sentinels).
    process.kill(set.pids.at(-1)!, 'SIGKILL');
    // The client connects again (as after a failover or a network blip): it asks the sentinels for the master and
    // subscribes to each for failovers, the killed one too.
    (client as Redis).disconnect(true);
    expect(await client.ping()).toBe('PONG');
    // ioredis tries the killed sentinel again after 50 ms, then 100, 150…: several attempts in two seconds, each one
    // printed before. What is asserted is that none is: there is no event to wait for.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(printed.mock.calls.flat().join(' ')).not.toContain('Unhandled error event');
    expect(await client.ping()).toBe('PONG');
  } finally {
    printed.mockRestore();
  }
});
