// `gatehouse usage` reads any consumer's counters from the Redis the gateways
// count in, and agrees with what the consumer's own account API says.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runGatehouse } from '../helpers/cli.js';
import { jwtPayload, login } from '../helpers/gateway.js';
import { startOnRedis, useQuota, type RedisGateway } from './support.js';

let running: RedisGateway;
let configFile: string;
const routes = (upstream: string) => [
  {
    name: 'api',
    prefix: '/api',
    upstreams: [upstream],
    quotas: [
      { name: 'daily', by: 'subject', per: 'day', limit: 20, tiers: { claim: 'roles', limits: { free: 50 } } },
      { name: 'tenant-daily', by: 'claim:groups', per: 'day', limit: 100 },
    ],
  },
];

beforeAll(async () => {
  running = await startOnRedis(routes);
  const { gw } = running;
  configFile = join(gw.dir, 'gatehouse.yaml');
  await writeFile(
    configFile,
    stringify({
      identity: { provider: 'local', usersFile: gw.usersFile },
      tokens: { keysFile: join(gw.dir, 'keys.json') },
      store: { url: gw.config.store.url, keyPrefix: gw.config.store.keyPrefix },
      routes: routes(running.upstream.url),
    }),
  );
});
afterAll(() => running.close());

const use = (name: string, times: number) => useQuota(running.gw, name, times);

describe('gatehouse usage', () => {
  it("agrees with the consumer's own account API, for a subject and for a tenant", async () => {
    await use('fran', 7);
    await use('fred', 3);
    const token = (await login(running.gw.url, 'fran', 'fran-password-1')).access_token;
    const sub = jwtPayload(token).sub as string;
    const own = (await (await fetch(`${running.gw.url}/api/v1/account/limits`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      limits: Array<Record<string, unknown>>;
    };

    const bySubject = await runGatehouse(['--config', configFile, 'usage', `subject:${sub}`, '--tier', 'free', '--json']);
    expect(bySubject.code).toBe(0);
    const subjectUsage = JSON.parse(bySubject.stdout) as Array<Record<string, unknown>>;
    expect(subjectUsage).toHaveLength(1);
    const pick = ({ route, limit, tier, quota, used, remaining }: Record<string, unknown>) => ({ route, limit, tier, quota, used, remaining });
    expect(pick(subjectUsage[0]!)).toEqual(pick(own.limits[0]!));
    expect(subjectUsage[0]).toMatchObject({ used: 7, remaining: 43 });

    const byTenant = await runGatehouse(['--config', configFile, 'usage', 'claim:groups=acme']);
    expect(byTenant.code).toBe(0);
    expect(byTenant.stdout).toMatch(/^ROUTE +LIMIT +PER +TIER +QUOTA +USED +REMAINING +WHOLE AGAIN\napi +tenant-daily +day +default +100 +10 +90 +\d{4}-/);
    expect(pick(JSON.parse((await runGatehouse(['--config', configFile, 'usage', 'claim:groups=acme', '--json'])).stdout)[0])).toEqual(pick(own.limits[1]!));
  });

  it('refuses a consumer it cannot read, and says so', async () => {
    const bad = await runGatehouse(['--config', configFile, 'usage', 'fran']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/CONSUMER is subject:<sub>, apiKey:<id>, address:<ip> or claim:<name>=<value>/);
    // The memory store's counters live inside each gateway: nothing outside can read them.
    const memoryConfig = join(running.gw.dir, 'memory.yaml');
    await writeFile(
      memoryConfig,
      stringify({
        identity: { provider: 'local', usersFile: running.gw.usersFile },
        tokens: { keysFile: join(running.gw.dir, 'keys.json') },
        routes: routes(running.upstream.url),
      }),
    );
    const memory = await runGatehouse(['--config', memoryConfig, 'usage', 'claim:groups=acme']);
    expect(memory.code).toBe(1);
    expect(memory.stderr).toMatch(/the memory store counts inside each gateway process/);
  });
});
