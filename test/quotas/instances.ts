// Three gateway instances on one store, as three processes would be (each its
// own store connections, caches and counters), sharing the users file and the
// signing keys; and the scenario the Redis and Cluster tests both run: many
// parallel requests spread over the three must be counted as one.
import { join } from 'node:path';
import { expect } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { uniquePrefix } from '../helpers/redis-server.js';
import { bearerOf, paramsOf, parseRateLimitField, PLAN_USERS } from './support.js';

export const BUDGET_ROUTES = (upstream: string) => [
  {
    name: 'api',
    prefix: '/api',
    upstreams: [upstream],
    quotas: [{ name: 'daily', by: 'subject', per: 'day', limit: 10, tiers: { claim: 'roles', limits: { free: 1000, pro: 100000 } } }],
  },
  { name: 'team', prefix: '/team', upstreams: [upstream], quotas: [{ name: 'tenant-daily', by: 'claim:groups', per: 'day', limit: 300 }] },
];

export async function startInstances(storeUrl: string, routes: unknown[], count = 3): Promise<TestGateway[]> {
  const store = { url: storeUrl, keyPrefix: uniquePrefix() };
  const first = await startTestGateway({ users: PLAN_USERS, config: { store, routes } });
  const others = await Promise.all(
    Array.from({ length: count - 1 }, () =>
      startTestGateway({
        users: PLAN_USERS,
        config: { store, routes, identity: { usersFile: first.usersFile }, tokens: { keysFile: join(first.dir, 'keys.json') } },
      }),
    ),
  );
  return [first, ...others];
}

export interface Answer {
  status: number;
  remaining: number;
}

/** `total` requests with `headers`, `parallel` at a time, round-robin over the instances; each answer's status and its `limit`'s `r`. */
export async function spread(instances: TestGateway[], path: string, headers: Record<string, string>, total: number, limit: string, parallel = 48) {
  const answers: Answer[] = [];
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const n = next++;
      const response = await fetch(`${instances[n % instances.length]!.url}${path}`, { headers });
      await response.arrayBuffer();
      const state = parseRateLimitField(response.headers.get('ratelimit'));
      answers.push({ status: response.status, remaining: paramsOf(state, limit).r as number });
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return answers;
}

/** How many of the answers were accepted. */
export function accepted(answers: Answer[]): number {
  return answers.filter((a) => a.status === 200).length;
}

/** The accepted answers told every remaining count from budget-1 down to 0 once each; the refused ones 0. */
export function expectCountsConsistent(answers: Answer[], budget: number): void {
  const admitted = answers.filter((a) => a.status === 200);
  const refused = answers.filter((a) => a.status !== 200);
  expect(admitted).toHaveLength(budget);
  expect(new Set(refused.map((a) => a.status))).toEqual(new Set(answers.length > budget ? [429] : []));
  expect(admitted.map((a) => a.remaining).sort((a, b) => a - b)).toEqual(Array.from({ length: budget }, (_, i) => i));
  for (const a of refused) expect(a.remaining).toBe(0);
}

/**
 * 3,000 requests of a free-plan user over the three, 300 of a pro user, and 250 each of two members of one tenant:
 * the answers, for the test to hold to its budgets.
 */
export async function spendBudgetsAcrossInstances(instances: TestGateway[]): Promise<{ free: Answer[]; pro: Answer[]; team: Answer[] }> {
  const url = instances[0]!.url;
  const [fran, fred, paula] = await Promise.all([bearerOf(url, 'fran'), bearerOf(url, 'fred'), bearerOf(url, 'paula')]);
  const [free, pro] = await Promise.all([spread(instances, '/api/x', fran, 3000, 'daily'), spread(instances, '/api/x', paula, 300, 'daily', 8)]);
  const [franTeam, fredTeam] = await Promise.all([
    spread(instances, '/team/x', fran, 250, 'tenant-daily'),
    spread(instances, '/team/x', fred, 250, 'tenant-daily'),
  ]);
  return { free, pro, team: [...franTeam, ...fredTeam] };
}
