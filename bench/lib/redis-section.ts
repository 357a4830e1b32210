// What a section measured on Redis starts and stops: a redis-server (or
// BENCH_REDIS_URL's), the bench upstream, and the processes the section adds,
// all stopped whatever happens.
import { startRedisServer, type RedisServerHandle } from '../../test/helpers/redis-server.js';
import type { GatehouseProcess } from './gatehouse.js';
import { startServer, type ServerProcess } from './processes.js';

export interface RedisSection {
  store: { url: string };
  upstream: ServerProcess;
  /** Stopped with the section. */
  servers: Array<ServerProcess | GatehouseProcess>;
}

export async function onRedis(run: (section: RedisSection) => Promise<void>): Promise<void> {
  const servers: Array<ServerProcess | GatehouseProcess> = [];
  let redis: RedisServerHandle | undefined;
  try {
    const store = { url: process.env.BENCH_REDIS_URL ?? (redis = await startRedisServer()).url };
    const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
    servers.push(upstream);
    await run({ store, upstream, servers });
  } finally {
    await Promise.allSettled(servers.map((server) => server.stop()));
    await redis?.close();
  }
}
