// A daily quota starts again at midnight in its configured time zone, not at
// UTC's, on a real Redis: the clock is faked (Date only), the counting and its
// keys are real. Paris is UTC+1 and New York UTC-5 on the chosen day.
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import type { TestGateway } from '../helpers/gateway.js';
import { bearerOf, paramsOf, parseRateLimitField, startOnRedis, type RedisGateway } from './support.js';

const daily = (timeZone: string) => [{ name: 'daily', by: 'subject', per: 'day', limit: 3, timeZone }];

let gw: TestGateway;
let running: RedisGateway;
beforeAll(async () => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(new Date('2031-01-15T22:59:00Z'));
  running = await startOnRedis((upstream) => [
    { name: 'paris', prefix: '/paris', upstreams: [upstream], quotas: daily('Europe/Paris') },
    { name: 'new-york', prefix: '/new-york', upstreams: [upstream], quotas: daily('America/New_York') },
  ]);
  gw = running.gw;
});
afterAll(async () => {
  await running.close();
  vi.useRealTimers();
});

async function call(path: string): Promise<{ status: number; remaining: number; resetS: number; retryAfter: string | null }> {
  const response = await fetch(`${gw.url}${path}`, { headers: await bearerOf(gw.url, 'fran') });
  await response.arrayBuffer();
  const state = paramsOf(parseRateLimitField(response.headers.get('ratelimit')), 'daily');
  return { status: response.status, remaining: state.r as number, resetS: state.t as number, retryAfter: response.headers.get('retry-after') };
}

async function useUp(path: string): Promise<void> {
  for (let i = 0; i < 3; i++) expect((await call(path)).status).toBe(200);
}

it('starts a new day at midnight in the configured zone, and says when in RateLimit and Retry-After', async () => {
  // 23:59 in Paris, 17:59 in New York.
  await useUp('/paris');
  await useUp('/new-york');
  expect(await call('/paris')).toEqual({ status: 429, remaining: 0, resetS: 60, retryAfter: '60' });
  expect(await call('/new-york')).toEqual({ status: 429, remaining: 0, resetS: 6 * 3600 + 60, retryAfter: String(6 * 3600 + 60) });

  // Midnight in Paris: its day starts again; New York's does not.
  vi.setSystemTime(new Date('2031-01-15T23:00:00Z'));
  expect(await call('/paris')).toMatchObject({ status: 200, remaining: 2, resetS: 24 * 3600 });
  expect((await call('/new-york')).status).toBe(429);

  // Midnight in UTC resets nothing.
  vi.setSystemTime(new Date('2031-01-16T00:00:05Z'));
  expect((await call('/new-york')).status).toBe(429);
  await call('/paris');
  await call('/paris');
  expect((await call('/paris')).status).toBe(429);

  // Midnight in New York.
  vi.setSystemTime(new Date('2031-01-16T05:00:00Z'));
  expect(await call('/new-york')).toMatchObject({ status: 200, remaining: 2, resetS: 24 * 3600 });
  expect((await call('/paris')).status).toBe(429);
});
