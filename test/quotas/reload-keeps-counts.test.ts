// A reload keeps the counts of a limit whose identity (route name, limit name,
// window) it keeps, even with a new size, and starts a renamed limit from zero;
// on the memory store the gateway says at start that it counts alone.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFileGateway, type FileGateway } from '../helpers/config-file.js';
import { login } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

let upstream: Upstream;
let gw: FileGateway;
const quotaRoute = (name: string, limit: number, extra: object = {}) => ({
  name: 'orders',
  prefix: '/orders',
  upstreams: [upstream.url],
  quotas: [{ name, by: 'subject', per: 'day', limit }],
  ...extra,
});

beforeAll(async () => {
  upstream = await startUpstream();
  gw = await startFileGateway([quotaRoute('daily', 3)]);
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

it('keeps the counts of a limit the reload keeps, and starts a renamed one from zero', async () => {
  expect(gw.logs.entries().some((entry) => /route quotas count in this instance only/.test(String(entry.msg)))).toBe(true);
  const alice = { authorization: `Bearer ${(await login(gw.url, 'alice', 'alice-password-1')).access_token}` };
  const status = async () => {
    const response = await fetch(`${gw.url}/orders/1`, { headers: alice });
    await response.arrayBuffer();
    return response.status;
  };
  expect(await status()).toBe(200);
  expect(await status()).toBe(200);

  // Another size and another route setting, the same identity: 2 of 4 used.
  let from = gw.logs.entries().length;
  await gw.writeRoutes([quotaRoute('daily', 4, { responseTimeoutMs: 20_000 })]);
  await gw.logs.next((entry) => entry.msg === 'config reloaded', from);
  expect(await status()).toBe(200);
  expect(await status()).toBe(200);
  expect(await status()).toBe(429);

  // Renamed: a new limit, counted from zero.
  from = gw.logs.entries().length;
  await gw.writeRoutes([quotaRoute('per-day', 4)]);
  await gw.logs.next((entry) => entry.msg === 'config reloaded', from);
  for (let i = 0; i < 4; i++) expect(await status()).toBe(200);
  expect(await status()).toBe(429);
}, 30_000);
