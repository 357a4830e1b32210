// Readiness means "send me traffic" (src/server/readiness.ts): a Redis outage
// makes an instance degraded, not unready, while it still serves (cached
// tokens verify, 202s are journaled); it is unready (503) only when it cannot
// serve at all: draining, its public listener down. Liveness stays liveness.
// A real redis-server is stopped and started under a running gateway.
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { gatehouseError } from '../../src/core/errors.js';
import { evaluateReadiness, type ReadinessCheck } from '../../src/server/readiness.js';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

let dir: string;
let redis: RedisServerHandle;
let upstream: Upstream;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-readiness-'));
  // Durable, so that the sessions are still there when it comes back: an outage, not a Redis replaced empty.
  redis = await startRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir] });
  upstream = await startUpstream();
});

afterAll(async () => {
  await upstream?.close();
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Readiness {
  status: number;
  body: { status: string; checks: Record<string, { status: string } & Record<string, unknown>> } & Record<string, unknown>;
}

async function readiness(base: string | undefined): Promise<Readiness> {
  const response = await fetch(`${base}/readyz`);
  return { status: response.status, body: (await response.json()) as Readiness['body'] };
}

const startOnRedis = () =>
  startTestGateway({
    config: { store: { url: redis.url, keyPrefix: uniquePrefix() }, routes: [{ name: 'orders', prefix: '/orders', upstreams: [upstream.url] }] },
  });

describe('/readyz through a Redis outage', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startOnRedis();
  });
  afterAll(async () => {
    await redis.start();
    await gw?.close();
  });

  it('stays 200, degraded, naming the store and what still works; a cached token is still served; ready again once Redis is back', async () => {
    const before = await readiness(gw.adminUrl);
    expect(before).toMatchObject({ status: 200, body: { status: 'ready', store: 'redis', checks: { store: { status: 'ok', kind: 'redis', up: true } } } });
    for (const name of ['draining', 'listener', 'signingKeys']) expect(before.body.checks[name]?.status, name).toBe('ok');

    const alice = await login(gw.url, 'alice', 'alice-password-1');
    const proxied = () => fetch(`${gw.url}/orders/1`, { headers: { authorization: `Bearer ${alice.access_token}` } });
    // Verified (and cached) while the store answers.
    expect((await proxied()).status).toBe(200);

    await redis.stop();
    const during = await readiness(gw.adminUrl);
    expect(during.status).toBe(200);
    expect(during.body.status).toBe('degraded');
    expect(during.body.checks.store).toMatchObject({ status: 'degraded', kind: 'redis', up: false, reason: expect.any(String) });
    expect(during.body.checks.store!.stillServing).toEqual(expect.arrayContaining([expect.stringMatching(/token/)]));
    expect(during.body.checks.store!.refused).toEqual(expect.arrayContaining([expect.stringMatching(/logins/)]));
    // The rest of the instance is as it was: nothing else is blamed.
    for (const name of ['draining', 'listener', 'signingKeys']) expect(during.body.checks[name]?.status, name).toBe('ok');
    expect((await proxied()).status).toBe(200);
    // Liveness stays liveness: the process serves.
    expect((await fetch(`${gw.adminUrl}/healthz`)).status).toBe(200);

    await redis.start();
    await vi.waitFor(async () => expect((await readiness(gw.adminUrl)).body.status).toBe('ready'), { timeout: 15_000, interval: 100 });
    expect((await proxied()).status).toBe(200);
  });
});

describe('/readyz unready only when the instance cannot serve', () => {
  it('answers 503 not_ready, its listener entry unready, once the public listener no longer accepts connections', async () => {
    const gw = await startOnRedis();
    try {
      const server = gw.gateway.app.server;
      server.close();
      await once(server, 'close');
      const answer = await readiness(gw.adminUrl);
      expect(answer.status).toBe(503);
      expect(answer.body).toMatchObject({ status: 'unready', checks: { listener: { status: 'unready', listening: false }, store: { status: 'ok' } } });
      expect(answer.body.$diagnoses).toEqual([expect.objectContaining({ $detail: expect.stringMatching(/the gateway cannot serve$/) })]);
    } finally {
      await gw.close();
    }
  });

  it('answers 503 shutting_down while it drains, the other checks still shown', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const slow = await startUpstream((_req, res) => void held.then(() => res.end('done')));
    const gw = await startTestGateway({
      config: { store: { url: redis.url, keyPrefix: uniquePrefix() }, routes: [{ name: 'slow', prefix: '/slow', auth: 'none', upstreams: [slow.url] }] },
    });
    try {
      const inFlight = fetch(`${gw.url}/slow/1`);
      await vi.waitFor(() => expect(slow.seen.length).toBe(1));
      const closing = gw.gateway.close({ graceMs: 30_000 });
      const answer = await readiness(gw.adminUrl);
      expect(answer.status).toBe(503);
      expect(answer.body).toMatchObject({ status: 'unready', checks: { draining: { status: 'unready', draining: true }, store: { status: 'ok' } } });
      expect(answer.body.$diagnoses).toEqual([expect.objectContaining({ $detail: expect.stringMatching(/stopping/) })]);
      release();
      expect((await inFlight).status).toBe(200);
      await closing;
    } finally {
      release();
      await gw.close().catch(() => {});
      await slow.close();
    }
  });
});

describe('how the checks fold (server/readiness.ts)', () => {
  const refusalOf = (name: string) => gatehouseError('not_ready', { reason: `readiness check ${name} failed` });
  const ok: ReadinessCheck = { name: 'a', run: () => ({ status: 'ok', detail: { seen: 1 } }) };
  const degraded: ReadinessCheck = { name: 'b', run: async () => ({ status: 'degraded', detail: { why: 'down' } }) };

  it('is degraded, still 200, when the worst entry is degraded; each entry keeps its detail and the extra fields stay at the top', async () => {
    const answer = await evaluateReadiness([ok, degraded], { store: 'redis' }, refusalOf);
    expect(answer).toEqual({
      status: 'degraded',
      httpStatus: 200,
      headers: {},
      body: { status: 'degraded', checks: { a: { status: 'ok', seen: 1 }, b: { status: 'degraded', why: 'down' } }, store: 'redis' },
    });
  });

  it('is unready, 503 with the first refusal, when a check throws: the other entries are still shown', async () => {
    const broken: ReadinessCheck = {
      name: 'broken',
      run: () => {
        throw new Error('boom');
      },
    };
    const answer = await evaluateReadiness([ok, broken, degraded], { store: 'redis' }, refusalOf);
    expect(answer.httpStatus).toBe(503);
    expect(answer.body).toMatchObject({
      status: 'unready',
      checks: { a: { status: 'ok' }, broken: { status: 'unready' }, b: { status: 'degraded' } },
      $diagnoses: [{ $detail: expect.stringMatching(/the gateway cannot serve$/) }],
    });
    expect(answer.body).not.toHaveProperty('store');
  });
});
