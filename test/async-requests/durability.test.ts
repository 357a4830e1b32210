// Accepted means durable, and unknown means unknown: records a gateway took
// while Redis was down survive the gateway's stop (journaled, replayed by the
// next start), and another instance never calls such a record unknown (404)
// while it may still be on its way to the store. A real redis-server, stopped
// and started again, with an append-only file so that it loses nothing itself.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { login, startTestGateway, writeTestUsers, DEFAULT_TEST_USERS, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { startRedisServer, type RedisServerHandle } from '../helpers/redis-server.js';
import { SERVICE_TOKEN, TestStore, makeStore, poll, startScriptedUpstream, type ScriptedUpstream } from './support.js';

let dir: string;
let redis: RedisServerHandle;
let up: ScriptedUpstream;
/** One users file and one keys file for every gateway here: instances of one deployment. */
let shared: { identity: { usersFile: string }; tokens: { keysFile: string } };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-durability-'));
  redis = await startRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir] });
  up = await startScriptedUpstream();
  const usersFile = join(dir, 'users.yaml');
  await writeTestUsers(usersFile, DEFAULT_TEST_USERS);
  shared = { identity: { usersFile }, tokens: { keysFile: join(dir, 'keys.json') } };
});

afterAll(async () => {
  await up?.close();
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const ROUTES = () => [{ name: 'orders', prefix: '/orders', upstreams: [up.url] }];

function start(store: TestStore, requests: Record<string, unknown> = {}): Promise<TestGateway> {
  return startTestGateway({ store, config: { ...shared, requests: { serviceToken: SERVICE_TOKEN, ...requests }, routes: ROUTES() } });
}

async function submit(gw: TestGateway, tokens: TokenSetBody): Promise<string> {
  const response = await fetch(`${gw.url}/orders/new`, { method: 'POST', headers: { authorization: `Bearer ${tokens.access_token}` } });
  expect(response.status).toBe(202);
  return ((await response.json()) as { requestId: string }).requestId;
}

describe('records accepted while Redis is down', () => {
  it('survive a stop of the gateway before Redis is back: journaled, replayed by the next start, every one found', async () => {
    const journalDir = join(dir, 'journal-stop');
    const store = new TestStore(await makeStore('redis', redis.url));
    const first = await start(store, { journalDir });
    let second: TestGateway | undefined;
    try {
      const alice = await login(first.url, 'alice', 'alice-password-1');
      await submit(first, alice);
      await redis.stop();
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) ids.push(await submit(first, alice));
      expect(first.gateway.requests.queued).toBe(10);
      // On disk before the 202s went out.
      expect((await readdir(journalDir)).filter((name) => name.endsWith('.jsonl')).length).toBeGreaterThan(0);
      // The gateway stops while Redis is still away: its outbox goes to the journal.
      await first.close();
      expect(first.logs.entries().filter((entry) => entry.event === 'outbox_lost')).toEqual([]);

      await redis.start();
      second = await start(store, { journalDir });
      const gw = second;
      for (const id of ids) {
        await vi.waitFor(async () => expect((await poll(gw.url, id, alice.access_token)).body).toEqual({ status: 'pending' }), {
          timeout: 15_000,
          interval: 200,
        });
      }
      // Replayed, so removed.
      await vi.waitFor(async () => expect((await readdir(journalDir)).filter((name) => name.endsWith('.jsonl'))).toEqual([]), { timeout: 5_000 });
    } finally {
      await redis.start();
      await second?.close();
      await store.close();
    }
  });
});

describe('two instances on one Redis', () => {
  it('the other instance answers 503 with Retry-After, never 404, for a record accepted during an outage and not yet written', async () => {
    const storeA = new TestStore(await makeStore('redis', redis.url, 'test:two:'));
    const storeB = new TestStore(await makeStore('redis', redis.url, 'test:two:'));
    const a = await start(storeA, { journalDir: join(dir, 'journal-a') });
    const b = await start(storeB, { journalDir: join(dir, 'journal-b') });
    try {
      const alice = await login(a.url, 'alice', 'alice-password-1');
      const known = await submit(a, alice);
      expect((await poll(b.url, known, alice.access_token)).status).toBe(200);

      await redis.stop();
      const accepted = await submit(a, alice);
      expect(a.gateway.requests.queued).toBe(1);
      // Redis is back, but A has not written its record yet.
      const release = storeA.holdCreates();
      await redis.start();
      try {
        // B reads from Redis again…
        await vi.waitFor(async () => expect((await poll(b.url, known, alice.access_token)).status).toBe(200), { timeout: 10_000, interval: 100 });
        // …and still does not call A's record unknown.
        const answer = await poll(b.url, accepted, alice.access_token);
        expect(answer.status).toBe(503);
        expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        // Nor an id nobody ever accepted: B cannot tell the two apart yet.
        expect((await poll(b.url, randomUUID(), alice.access_token)).status).toBe(503);
      } finally {
        release();
      }
      await vi.waitFor(() => expect(a.gateway.requests.queued).toBe(0), { timeout: 15_000 });
      expect((await poll(b.url, accepted, alice.access_token)).body).toEqual({ status: 'pending' });
    } finally {
      await redis.start();
      await Promise.all([a.close(), b.close()]);
      await Promise.all([storeA.close(), storeB.close()]);
    }
  });
});
