// The users' marker lives in the users' hash slot, so the scripts and the
// transaction that read and write both run on a real Redis Cluster (a key in
// another slot would be refused, CROSSSLOT): a seed, a loss found and marked,
// and an import that ends it, with the prefix the Kubernetes manifests use
// and with one that carries a hash tag of its own.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreUsers } from '../../src/users/store-users.js';
import { readUsersFile } from '../../src/users/users-file.js';
import { createStore } from '../../src/store/create-store.js';
import { Keyspace } from '../../src/store/keyspace.js';
import { writeTestUsers } from '../helpers/gateway.js';
import { startCluster, type RedisCluster } from '../helpers/redis-topology.js';

const silent = pino({ level: 'silent' });

let cluster: RedisCluster;
let raw: Cluster;
let dir: string;

beforeAll(async () => {
  cluster = await startCluster();
  raw = new Cluster(cluster.nodes);
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-users-cluster-'));
}, 90_000);

afterAll(async () => {
  raw?.disconnect();
  await cluster?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the users and their marker on Redis Cluster', { timeout: 60_000 }, () => {
  for (const keyPrefix of ['gatehouse:', '{tenant-7}:gatehouse:']) {
    it(`seeds, marks a loss and ends it with an import, prefix ${keyPrefix}`, async () => {
      const seedFile = join(dir, `${keyPrefix.replace(/\W/g, '')}.yaml`);
      await writeTestUsers(seedFile, [{ name: 'alice', password: 'a-long-password-1' }]);
      const url = `redis-cluster://${cluster.nodes.map(({ host, port }) => `${host}:${port}`).join(',')}`;
      const store = await createStore({ url, keyPrefix }, silent);
      try {
        const users = new StoreUsers({ records: store.users!, onFeedResumed: () => () => {}, logger: silent, seedFile });
        expect(Object.keys((await users.read()).data.users)).toStrictEqual(['alice']);
        const keys = new Keyspace(keyPrefix);
        expect(await raw.get(keys.usersMarker)).toBe('seeded');

        await raw.del(keys.users);
        await raw.del(keys.usersMarker);
        await users.read();
        expect(users.loss).toStrictEqual({ missing: [keys.users, keys.usersMarker] });
        expect(await raw.get(keys.usersMarker)).toBe('lost');

        await users.replaceAll(await readUsersFile(seedFile));
        expect(Object.keys((await users.read()).data.users)).toStrictEqual(['alice']);
        expect(users.loss).toBeUndefined();
      } finally {
        await store.close();
      }
    });
  }
});
