// What the quota tests share: the users of three plans and two tenants, a
// route with a per-subject rate, a per-tenant daily quota and tiers by role,
// and reading the RateLimit fields with a structured-field parser.
import { parseList, type Item } from 'structured-headers';
import { login, startTestGateway, type TestGateway, type TestUser } from '../helpers/gateway.js';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

export const PLAN_USERS: TestUser[] = [
  { name: 'fran', password: 'fran-password-1', roles: ['free'], groups: ['acme'], apiKeys: 1 },
  { name: 'fred', password: 'fred-password-1', roles: ['free'], groups: ['acme'] },
  { name: 'paula', password: 'paula-password-1', roles: ['pro'], groups: ['globex'] },
  { name: 'ivan', password: 'ivan-password-1', roles: ['internal'], groups: ['globex'] },
];

export async function bearerOf(url: string, name: string): Promise<Record<string, string>> {
  const user = PLAN_USERS.find((u) => u.name === name)!;
  return { authorization: `Bearer ${(await login(url, user.name, user.password)).access_token}` };
}

export interface FieldItem {
  name: string;
  params: Record<string, unknown>;
}

/** A RateLimit or RateLimit-Policy field, parsed as the draft says (a List of Items named by Strings); throws when it is not one. */
export function parseRateLimitField(value: string | null): FieldItem[] {
  if (value === null) throw new Error('the field is absent');
  return parseList(value).map((member) => {
    const [name, params] = member as Item;
    if (typeof name !== 'string') throw new Error(`an item that is not a String: ${String(name)}`);
    return { name, params: Object.fromEntries(params) };
  });
}

/** `name`'s parameters in a parsed field. */
export function paramsOf(items: FieldItem[], name: string): Record<string, unknown> {
  const item = items.find((i) => i.name === name);
  if (item === undefined) throw new Error(`no item ${name} in ${JSON.stringify(items)}`);
  return item.params;
}

export interface RedisGateway {
  redis: RedisServerHandle;
  upstream: Upstream;
  gw: TestGateway;
  close(): Promise<void>;
}

/** One gateway with the plan users on a redis-server of its own, its routes (given the upstream's URL) going to one echo upstream. */
export async function startOnRedis(routes: (upstream: string) => unknown[]): Promise<RedisGateway> {
  const [redis, upstream] = await Promise.all([startRedisServer(), startUpstream()]);
  const gw = await startTestGateway({ users: PLAN_USERS, config: { store: { url: redis.url, keyPrefix: uniquePrefix() }, routes: routes(upstream.url) } });
  return {
    redis,
    upstream,
    gw,
    async close() {
      await gw.close();
      await Promise.all([upstream.close(), redis.close()]);
    },
  };
}

/** `times` requests of user `name` through `gw` on `path`, each of which must be let through. */
export async function useQuota(gw: TestGateway, name: string, times: number, path = '/api/x'): Promise<void> {
  const headers = await bearerOf(gw.url, name);
  for (let i = 0; i < times; i++) {
    const response = await fetch(`${gw.url}${path}`, { headers });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`request ${i + 1} of ${name} got ${response.status}`);
  }
}
