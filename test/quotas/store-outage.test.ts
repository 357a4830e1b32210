// Through a Redis outage each limit does what it says: `whenStoreDown: open`
// lets requests through uncounted, `closed` answers 503; both are counted in
// metrics, and counting resumes once Redis is back.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import { bearerOf, startOnRedis, type RedisGateway } from './support.js';

const quota = (whenStoreDown: string) => [{ name: 'per-minute', by: 'subject', per: 'minute', limit: 100, whenStoreDown }];

let running: RedisGateway;
beforeAll(async () => {
  running = await startOnRedis((upstream) => [
    { name: 'fails-open', prefix: '/open', upstreams: [upstream], quotas: quota('open') },
    { name: 'fails-closed', prefix: '/closed', upstreams: [upstream], quotas: quota('closed') },
  ]);
});
afterAll(() => running.close());

it('fails open or closed per limit while Redis is down, counts both, and counts again once it is back', async () => {
  const { gw, redis } = running;
  const fran = await bearerOf(gw.url, 'fran');
  const call = (path: string) => fetch(`${gw.url}${path}`, { headers: fran });
  // The token is checked (and cached) while Redis answers.
  expect((await call('/open/x')).headers.get('ratelimit')).toBe('"per-minute";r=99;t=1');
  expect((await call('/closed/x')).status).toBe(200);

  await redis.stop();
  const open = await call('/open/x');
  expect(open.status).toBe(200);
  expect(open.headers.get('ratelimit')).toBeNull();
  const closed = await call('/closed/x');
  expectDiagnoses(closed.status, await closed.text(), 503, /^503 \(Service Unavailable\) - temporarily_unavailable: /);
  expect(Number(closed.headers.get('retry-after'))).toBeGreaterThan(0);
  const metrics = await (await fetch(`${gw.adminUrl}/metrics`)).text();
  expect(metrics).toMatch(/gatehouse_quota_store_failures_total\{route="fails-open",limit="per-minute",outcome="open"\} 1/);
  expect(metrics).toMatch(/gatehouse_quota_store_failures_total\{route="fails-closed",limit="per-minute",outcome="closed"\} 1/);

  await redis.start();
  // The store reconnects on its own schedule: ask until it answers (the test's timeout bounds the wait).
  let answer: Response;
  do {
    answer = await call('/closed/x');
    await answer.arrayBuffer();
    if (answer.status !== 200) await sleep(100);
  } while (answer.status !== 200);
  // Redis came back empty (nothing persisted): the count starts again.
  expect(answer.headers.get('ratelimit')).toBe('"per-minute";r=99;t=1');
}, 60_000);
