// `gatehouse users unlock NAME`: clears the login throttling of a username in
// the configured Redis store — its count across addresses, and every
// username+address pair's failures and wait (found by SCAN on each master,
// since pair keys end with the address and a Cluster spreads them).
import { Cluster, type Redis } from 'ioredis';
import type { StoreConfig } from '../config/schema.js';
import { createRedisClient, type RedisClient } from '../store/redis-client.js';
import { parseStoreUrl } from '../store/store-url.js';
import { PAIR_FAILURES, PAIR_WAIT, USERNAME_FAILURES, usernameKey } from './login-throttle.js';

/** Deletes the username's throttling keys; resolves with how many there were. */
export async function unlockUsername(store: StoreConfig & { url: string }, username: string): Promise<number> {
  const client = createRedisClient(parseStoreUrl(store.url));
  try {
    const user = usernameKey(username);
    const limits = `${store.keyPrefix}limits:`;
    const keys = [
      `${limits}${USERNAME_FAILURES}:${user}`,
      ...(await scanAll(client, `${limits}${PAIR_FAILURES}:${user}:*`)),
      ...(await scanAll(client, `${limits}${PAIR_WAIT}:${user}:*`)),
    ];
    let deleted = 0;
    // One key per DEL: on a Cluster they live in different slots.
    for (const key of keys) deleted += await client.del(key);
    return deleted;
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
