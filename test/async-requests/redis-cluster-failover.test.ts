// A Cluster master killed (SIGKILL) under a flow of 202s, through the
// gateway: ioredis follows the slot map to the promoted replica, writes that
// failed on the way wait in the outbox and are written again, and every
// accepted request is found afterwards with its status. Status reports sent
// through the switch (on a backlog of pending requests): every one the
// internal API acknowledged is found afterwards and heard by its long poll.
// (Records and reports count as written once a replica of their slot's
// master holds them: test/store/cluster-replica-confirmation.test.ts.)
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
  it('finds every accepted request and every acknowledged status report afterwards', { timeout: 120_000 }, async () => {
    const run = await startFailoverRun(`redis-cluster://${cluster.nodes.map(({ host, port }) => `${host}:${port}`).join(',')}`, up);
    try {
      await run.acceptMore(300, 30_000);
      run.startReports();
      await run.acknowledgeMore(5, 10_000);
      const [victim] = await cluster.masters();
      await cluster.killMaster(victim!.port);
      await run.acceptMore(30, 30_000);
      await run.acknowledgeMore(20, 30_000);
      const { accepted, lost } = await run.finish();
      expect({ accepted, lost }).toEqual({ accepted, lost: [] });
      const reports = await run.checkReports();
      expect(reports).toEqual({ acknowledged: reports.acknowledged, lost: [], unheard: [] });
    } finally {
      await run.gw.close();
    }
  });
});
