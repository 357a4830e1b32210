// Clearing rate limiter counters from outside a running gateway (the CLI's
// `users unlock`): over a connection of its own to the Redis the config
// names, closed when done. Counters are found by name (keyspace.ts), and by
// SCAN on each master for those whose key is only known by its start, since
// a Cluster spreads them over its slots.
import { Cluster, type Redis } from 'ioredis';
import type { StoreConfig } from '../config/schema.js';
import { Keyspace } from './keyspace.js';
import { createRedisClient, type RedisClient } from './redis-client.js';
import { parseStoreUrl } from './store-url.js';

/** The counter of one key of the limiter `name`, or with `keyStart` every counter of it whose key begins so. */
export type CounterSelection = { name: string; key: string } | { name: string; keyStart: string };

/** Deletes the selected counters, in order; resolves with how many there were. */
export async function deleteLimiterCounters(store: StoreConfig & { url: string }, selections: readonly CounterSelection[]): Promise<number> {
  const keys = new Keyspace(store.keyPrefix);
  const client = createRedisClient(parseStoreUrl(store.url));
  // The outcome is this function's answer: without a listener ioredis prints each failed connection's stack.
  let connectionError: Error | undefined;
  client.on('error', (error: Error) => (connectionError = error));
  try {
    const found: string[] = [];
    for (const selection of selections) {
      if ('key' in selection) found.push(keys.limiterCounter(selection.name, selection.key));
      else found.push(...(await scanAll(client, `${keys.limiterCounter(selection.name, selection.keyStart)}*`)));
    }
    let deleted = 0;
    // One key per DEL: on a Cluster they live in different slots.
    for (const key of found) deleted += await client.del(key);
    return deleted;
  } catch (error) {
    // ioredis says why the command gave up ("max retries per request"), not why Redis could not be asked.
    const why = connectionError ?? error;
    throw new Error(`the store did not answer (${why instanceof Error ? why.message : String(why)}); run the command again once it does`, { cause: error });
  } finally {
    client.disconnect();
  }
}

async function scanAll(client: RedisClient, match: string): Promise<string[]> {
  const nodes: Redis[] = client instanceof Cluster ? client.nodes('master') : [client];
  const found: string[] = [];
  for (const node of nodes) {
    for await (const batch of node.scanStream({ match, count: 1000 }) as AsyncIterable<string[]>) found.push(...batch);
  }
  return found;
}
