// A rate so large that one request's share of the window is below the
// resolution of a time in epoch milliseconds (a billion a second) is never
// refused, and never fails the Redis script (an expiry of 0 ms would).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bearerOf, startOnRedis, type RedisGateway } from './support.js';

let running: RedisGateway;
beforeAll(async () => {
  running = await startOnRedis((upstream) => [
    { name: 'huge', prefix: '/huge', upstreams: [upstream], quotas: [{ name: 'per-second', by: 'subject', per: 'second', limit: 1_000_000_000 }] },
  ]);
});
afterAll(() => running.close());

it('lets every request of a billion-a-second rate through, counted', async () => {
  const headers = await bearerOf(running.gw.url, 'fran');
  const answers = await Promise.all(Array.from({ length: 20 }, () => fetch(`${running.gw.url}/huge/x`, { headers })));
  expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 20 }, () => 200));
  expect(answers[0]!.headers.get('ratelimit-policy')).toBe('"per-second";q=1000000000;w=1');
});
