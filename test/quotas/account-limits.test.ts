// The caller sees its own limits: the account API and the account page (in
// headless Chromium) show used, remaining and reset as the Redis counters
// hold them, sized by the caller's tier, a tenant's budget with its members' use.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { bearerOf, PLAN_USERS, startOnRedis, useQuota, type RedisGateway } from './support.js';

let running: RedisGateway;
let browser: TestBrowser;
beforeAll(async () => {
  running = await startOnRedis((upstream) => [
    {
      name: 'api',
      prefix: '/api',
      upstreams: [upstream],
      quotas: [
        { name: 'daily', by: 'subject', per: 'day', limit: 20, tiers: { claim: 'roles', limits: { free: 50, internal: 'unlimited' } } },
        { name: 'tenant-daily', by: 'claim:groups', per: 'day', limit: 100 },
        { name: 'per-hour', by: 'subject', per: 'hour', limit: 30 },
      ],
    },
    { name: 'open', prefix: '/open', upstreams: [upstream], auth: 'none', quotas: [{ name: 'anonymous', by: 'address', per: 'minute', limit: 5 }] },
  ]);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await running?.close();
});

const use = (name: string, times: number) => useQuota(running.gw, name, times);

describe("the caller's own limits", () => {
  it('are in the account API, as counted, sized by tier; limits by address are not the caller’s', async () => {
    await use('fran', 7);
    await use('fred', 3);
    const response = await fetch(`${running.gw.url}/api/v1/account/limits`, { headers: await bearerOf(running.gw.url, 'fran') });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const { limits } = (await response.json()) as { limits: Array<Record<string, unknown>> };
    expect(limits.map((l) => l.limit)).toEqual(['daily', 'tenant-daily', 'per-hour']);
    expect(limits[0]).toMatchObject({ route: 'api', by: 'subject', per: 'day', tier: 'free', quota: 50, used: 7, remaining: 43 });
    expect(limits[1]).toMatchObject({ by: 'claim:groups', tier: 'default', quota: 100, used: 10, remaining: 90 });
    expect(limits[2]).toMatchObject({ per: 'hour', quota: 30, used: 7, remaining: 23 });
    expect(Date.parse(limits[0]!.resetsAt as string)).toBeGreaterThan(Date.now());
    const internal = (await (await fetch(`${running.gw.url}/api/v1/account/limits`, { headers: await bearerOf(running.gw.url, 'ivan') })).json()) as {
      limits: unknown[];
    };
    expect(internal.limits[0]).toMatchObject({ limit: 'daily', tier: 'internal', quota: 'unlimited', used: null, remaining: null });
    expect((await fetch(`${running.gw.url}/api/v1/account/limits`)).status).toBe(401);
  });

  it('are on the account page, with the numbers the counters hold', async () => {
    const page = await browser.browser.newPage();
    try {
      await page.goto(`${running.gw.url}/account`);
      const fran = PLAN_USERS.find((u) => u.name === 'fran')!;
      await page.locator('#login-username').fill(fran.name);
      await page.locator('#login-password').fill(fran.password);
      await page.locator('#login-password').press('Enter');
      const daily = page.locator('tr[data-limit="api/daily"]');
      await daily.waitFor({ state: 'visible' });
      const cells = async (row: typeof daily) => (await row.locator('td').allTextContents()).map((text) => text.trim());
      const [service, limit, plan, used, remaining] = await cells(daily);
      expect({ service, limit, plan, used, remaining }).toEqual({ service: 'api', limit: 'daily: 50 a day', plan: 'free', used: '7', remaining: '43' });
      const tenant = await cells(page.locator('tr[data-limit="api/tenant-daily"]'));
      expect(tenant.slice(3, 5)).toEqual(['10', '90']);
      expect(await page.locator('#limits tr').count()).toBe(3);
    } finally {
      await page.close();
    }
  });
});
