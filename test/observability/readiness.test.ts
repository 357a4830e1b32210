// The store's readiness entry means a writable master: a Redis that answers
// PING but is a replica (a demoted master, or a node Sentinel has not
// switched away from yet) would lose or refuse every write, so the store is
// down for the gateway — degraded, not unready (test/server/readiness.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedisServer, type RedisServerHandle } from '../helpers/redis-server.js';

let master: RedisServerHandle;
let replica: RedisServerHandle;

beforeAll(async () => {
  master = await startRedisServer();
  replica = await startRedisServer({ args: ['--replicaof', '127.0.0.1', String(new URL(master.url).port)] });
});

afterAll(async () => {
  await replica?.close();
  await master?.close();
});

async function readiness(gw: TestGateway): Promise<number> {
  return (await fetch(`${gw.adminUrl}/readyz`)).status;
}

describe('/readyz', () => {
  it('answers 200 on a Redis master', async () => {
    const gw = await startTestGateway({ config: { store: { url: master.url } } });
    try {
      expect(await readiness(gw)).toBe(200);
    } finally {
      await gw.close();
    }
  });

  it('says the store is down on a Redis that answers but is a replica: no writable master is known', async () => {
    const gw = await startTestGateway({ config: { store: { url: replica.url } } });
    try {
      const response = await fetch(`${gw.adminUrl}/readyz`);
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ status: 'degraded', checks: { store: { status: 'degraded', kind: 'redis', up: false } } });
    } finally {
      await gw.close();
    }
  });
});
