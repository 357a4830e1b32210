// Issue 34, peers that exist: an instance is a peer (its key published, its
// view written, counted by the others) only once its listeners are up, and
// leaves on shutdown; one whose start failed (an address in use) was never
// one. The users comparison waits for each side's first read: a normal start
// raises no alarm. Real instances on one real Redis (test/scale/fleet.ts).
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/create-store.js';
import type { Store } from '../../src/store/store.js';
import { writeTestUsers } from '../helpers/gateway.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import type { Upstream } from '../helpers/upstream.js';
import { Fleet, heartbeats, PASSWORD, readiness, sharedKeysOf, startBackend, type Instance } from './fleet.js';

const ENV = { GATEHOUSE_SERVICE_TOKEN: randomBytes(32).toString('base64') };

let redis: { url: string; close(): Promise<void> };
let backend: Upstream;
let usersDir: string;
let usersFile: string;

/** A fleet on a key prefix of its own, and the store it shares, read directly. */
async function fleetOnItsOwn(): Promise<{ fleet: Fleet; store: Store }> {
  const keyPrefix = uniquePrefix();
  const store = await createStore({ url: redis.url, keyPrefix }, pino({ level: 'silent' }));
  return { fleet: new Fleet({ redisUrl: redis.url, keyPrefix, usersFile, backend }), store };
}

async function occupiedPort(): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

const usersAlarms = (instance: Pick<Instance, 'logs'>) => instance.logs.entries().filter((e) => e.view === 'users' && e.level === 40);

beforeAll(async () => {
  redis = await testRedisUrl();
  backend = await startBackend();
  usersDir = await mkdtemp(join(tmpdir(), 'gatehouse-peers-users-'));
  usersFile = join(usersDir, 'users.yaml');
  await writeTestUsers(usersFile, [{ name: 'alice', password: PASSWORD }]);
});

afterAll(async () => {
  await backend?.close();
  await redis?.close();
  await rm(usersDir, { recursive: true, force: true });
});

describe('peers that exist', { timeout: 60_000 }, () => {
  it.each(['server', 'admin'] as const)('an instance whose %s port is in use publishes no key and is counted by no peer', async (listener) => {
    const { fleet, store } = await fleetOnItsOwn();
    const blocker = await occupiedPort();
    const running = await fleet.start(ENV);
    try {
      const failed = await fleet.prepare(ENV, { [listener]: { port: (blocker.address() as AddressInfo).port } });
      const kid = failed.gateway.keys.signingKey().kid;
      await expect(failed.gateway.listen()).rejects.toMatchObject({ code: 'EADDRINUSE' });
      await heartbeats([running]);
      // Its key never reached the store, nor its view: the running instance counts no peer.
      expect([...(await store.sharedKeys!.allKeys()).keys()]).toStrictEqual([running.gateway.keys.signingKey().kid]);
      expect([...(await store.sharedKeys!.allInstances()).keys()]).toStrictEqual([sharedKeysOf(running).lastViews!.own.instance]);
      expect((await readiness(running)).body).toMatchObject({ peers: { peers: 0, keysDiffer: [], usersDiffer: [] } });
      await fleet.stop(failed);
      expect((await store.sharedKeys!.allKeys()).has(kid)).toBe(false);
    } finally {
      await fleet.stop(running);
      await store.close();
      blocker.close();
    }
  });

  it('a normal start logs no users-disagreement line, with users in a file or in the store, and a stopped instance leaves', async () => {
    for (const identity of [{}, { usersIn: 'store' }]) {
      const { fleet, store } = await fleetOnItsOwn();
      const first = await fleet.start(ENV, { identity });
      const second = await fleet.start(ENV, { identity });
      try {
        await heartbeats([first, second]);
        for (const instance of [first, second]) {
          expect(usersAlarms(instance), JSON.stringify(identity)).toStrictEqual([]);
          expect((await readiness(instance)).body).toMatchObject({ peers: { peers: 1, keysDiffer: [], usersDiffer: [] } });
        }
      } finally {
        await fleet.stop(second);
      }
      // Stopped: its view withdrawn, so the other counts it no more.
      await heartbeats([first]);
      expect((await readiness(first)).body).toMatchObject({ peers: { peers: 0 } });
      await fleet.stop(first);
      await store.close();
    }
  });
});
