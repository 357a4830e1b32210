// Three instances on one real redis-server count one budget: exactly the
// budget is accepted (±0), whatever instance each request reaches, and every
// answer's RateLimit field tells the count it was given.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestGateway } from '../helpers/gateway.js';
import { startRedisServer, type RedisServerHandle } from '../helpers/redis-server.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';
import { accepted, BUDGET_ROUTES, expectCountsConsistent, spendBudgetsAcrossInstances, startInstances } from './instances.js';

let redis: RedisServerHandle;
let upstream: Upstream;
let instances: TestGateway[];
beforeAll(async () => {
  [redis, upstream] = await Promise.all([startRedisServer(), startUpstream()]);
  instances = await startInstances(redis.url, BUDGET_ROUTES(upstream.url));
});
afterAll(async () => {
  await Promise.all(instances.map((gw) => gw.close()));
  await Promise.all([upstream.close(), redis.close()]);
});

it('allows exactly the budget over three instances on one Redis, a pro user unaffected, a tenant sharing one budget', async () => {
  const { free, pro, team } = await spendBudgetsAcrossInstances(instances);
  // The free plan's daily budget is 1,000 and the tenant's 300; the pro plan's is far above its 300 requests.
  expect([accepted(free), accepted(pro), accepted(team)]).toEqual([1000, 300, 300]);
  expectCountsConsistent(free, 1000);
  expectCountsConsistent(team, 300);
}, 120_000);
