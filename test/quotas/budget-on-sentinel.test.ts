// A budget over three instances on a real Sentinel set (one master, one replica, three sentinels), through a
// SENTINEL FAILOVER between two bursts: the replica that takes over holds every count the master had, so the budget
// neither starts again nor is spent twice. Nothing is sent during the switch itself (what the old master takes then is
// dropped when it is demoted: the async-requests failover tests deal with that).
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestGateway } from '../helpers/gateway.js';
import { startSentinelSet, type SentinelSet } from '../helpers/redis-topology.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';
import { accepted, BUDGET_ROUTES, spread, startInstances } from './instances.js';
import { bearerOf } from './support.js';

let set: SentinelSet;
let upstream: Upstream;
let instances: TestGateway[];
beforeAll(async () => {
  [set, upstream] = await Promise.all([startSentinelSet(), startUpstream()]);
  await set.waitForAgreement();
  const url = `redis-sentinel://${set.sentinels.map(({ host, port }) => `${host}:${port}`).join(',')}/${set.masterName}`;
  instances = await startInstances(url, BUDGET_ROUTES(upstream.url));
}, 120_000);
afterAll(async () => {
  await Promise.all((instances ?? []).map((gw) => gw.close()));
  await Promise.all([upstream?.close(), set?.close()]);
});

/** Until every instance says it is ready: its store connection answers as a writable master again. */
async function allReady(): Promise<void> {
  for (const gw of instances) {
    for (;;) {
      const ready = await fetch(`${gw.adminUrl}/readyz`).then(
        (response) => response.status === 200,
        () => false,
      );
      if (ready) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

it('keeps counting a daily budget of 1,000 through a SENTINEL FAILOVER: 600 before it, 400 of 600 after', { timeout: 120_000 }, async () => {
  const fran = await bearerOf(instances[0]!.url, 'fran'); // the free plan: 1,000 a day
  const before = await spread(instances, '/api/x', fran, 600, 'daily');
  expect(accepted(before)).toBe(600);
  await set.waitForReplication();
  await set.failover();
  await allReady();
  const after = await spread(instances, '/api/x', fran, 600, 'daily');
  expect(after.filter((answer) => answer.status !== 200 && answer.status !== 429)).toEqual([]);
  expect(accepted(after)).toBe(400);
});
