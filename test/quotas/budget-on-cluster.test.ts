// The same budget over three instances on a real Redis Cluster (three
// masters): each consumer's counters carry it as their hash tag, so every
// count is one script in one slot, and one consumer's counters share a slot.
import clusterKeySlot from 'cluster-key-slot';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Principal } from '../../src/core/principal.js';
import { consumerOf } from '../../src/limits/quotas/consumers.js';
import { Keyspace } from '../../src/store/keyspace.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startCluster, type RedisCluster } from '../helpers/redis-topology.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';
import { accepted, BUDGET_ROUTES, expectCountsConsistent, spendBudgetsAcrossInstances, startInstances } from './instances.js';

let cluster: RedisCluster;
let upstream: Upstream;
let instances: TestGateway[];
beforeAll(async () => {
  [cluster, upstream] = await Promise.all([startCluster(0), startUpstream()]);
  const url = `redis-cluster://${cluster.nodes.map((node) => `${node.host}:${node.port}`).join(',')}`;
  instances = await startInstances(url, BUDGET_ROUTES(upstream.url));
}, 120_000);
afterAll(async () => {
  await Promise.all((instances ?? []).map((gw) => gw.close()));
  await Promise.all([upstream?.close(), cluster?.close()]);
});

it('allows exactly the budget over three instances on a Cluster', async () => {
  const { free, pro, team } = await spendBudgetsAcrossInstances(instances);
  // The free plan's daily budget is 1,000 and the tenant's 300; the pro plan's is far above its 300 requests.
  expect([accepted(free), accepted(pro), accepted(team)]).toEqual([1000, 300, 300]);
  expectCountsConsistent(free, 1000);
  expectCountsConsistent(team, 300);
}, 120_000);

it("keeps one consumer's counters in one slot, whatever the route, limit or window", () => {
  const keys = new Keyspace('gh:');
  const slots = ['api:daily:day:2026-11-29', 'team:tenant-daily:day:2026-11-30', 'api:per-minute:minute'].map((counter) =>
    clusterKeySlot(keys.quotaCounter('sub:3f1c', counter)),
  );
  expect(new Set(slots).size).toBe(1);
  // A claim value holding braces cannot move a counter into another consumer's slot: consumers.ts escapes them.
  const caller = { sub: 'u1', roles: [], claims: { tenant: 'evil}{sub:victim' } } as unknown as Principal;
  const consumer = consumerOf('claim:tenant', caller, '');
  expect(keys.quotaCounter(consumer, 'x')).toBe('gh:quota:{tenant:evil%7d%7bsub:victim}:x');
  expect(clusterKeySlot(keys.quotaCounter(consumer, 'x'))).not.toBe(clusterKeySlot(keys.quotaCounter('sub:victim', 'x')));
});
