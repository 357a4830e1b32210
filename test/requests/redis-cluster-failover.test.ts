// A Cluster master killed (SIGKILL) under a flow of 202s, through the
// gateway: ioredis follows the slot map to the promoted replica, writes that
// failed on the way wait in the outbox and are written again, and every
// accepted request is found afterwards with its status.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type RedisCluster } from '../helpers/redis-topology.js';
import { startFailoverRun } from './failover-traffic.js';
import { startScriptedUpstream, type ScriptedUpstream } from './support.js';

let cluster: RedisCluster;
let up: ScriptedUpstream;

beforeAll(async () => {
  up = await startScriptedUpstream();
  cluster = await startCluster();
}, 90_000);

afterAll(async () => {
  await up?.close();
  await cluster?.close();
});

describe('a gateway on a Redis Cluster whose master is killed', () => {
  it('finds every accepted request afterwards', { timeout: 120_000 }, async () => {
    const run = await startFailoverRun(`redis-cluster://${cluster.nodes.map(({ host, port }) => `${host}:${port}`).join(',')}`, up);
    try {
      await run.acceptMore(30, 20_000);
      const [victim] = await cluster.masters();
      await cluster.killMaster(victim!.port);
      await run.acceptMore(30, 30_000);
      const { accepted, lost } = await run.finish();
      expect({ accepted, lost }).toEqual({ accepted, lost: [] });
    } finally {
      await run.gw.close();
    }
  });
});
