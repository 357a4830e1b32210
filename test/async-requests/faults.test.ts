// Faults: the store going away while 202s flow (a real redis-server stopped
// and started again; for the in-memory store, a wrapper that fails on
// demand), a full outbox, conflicting reports racing each other, and a
// gateway restarted on the same Redis.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { login, startTestGateway, writeTestUsers, DEFAULT_TEST_USERS, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { startRedisServer, type RedisServerHandle } from '../helpers/redis-server.js';
import {
  NOT_FOUND_BODY,
  SERVICE_TOKEN,
  STORE_KINDS,
  TestStore,
  makeStore,
  metric,
  poll,
  reportStatus,
  startScriptedUpstream,
  type ScriptedUpstream,
  type StoreKind,
} from './support.js';

let dir: string;
let redis: RedisServerHandle;
let up: ScriptedUpstream;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-faults-'));
  // Durable (append-only file, fsync'd on every write), so that a Redis
  // stopped and started again still holds what it held: every loss the tests
  // could see is then the gateway's.
  redis = await startRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir] });
  up = await startScriptedUpstream();
});

afterAll(async () => {
  await up?.close();
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const ROUTES = () => [{ name: 'orders', prefix: '/orders', upstreams: [up.url] }];

/** Resolves once every record waiting in the gateway's outbox is in the store. */
async function drained(gw: TestGateway): Promise<void> {
  await vi.waitFor(() => expect(gw.gateway.requests.queued).toBe(0), { timeout: 15_000 });
}

/** Takes the store away and brings it back: the real Redis, or the wrapper's switch. */
interface Outage {
  begin(): Promise<void>;
  end(): Promise<void>;
}

function outageOf(kind: StoreKind, store: TestStore): Outage {
  if (kind === 'redis') return { begin: () => redis.stop(), end: () => redis.start() };
  return {
    begin: async () => {
      store.down = true;
    },
    end: async () => {
      store.down = false;
    },
  };
}

interface Sent {
  status: number;
  id: string | undefined;
  location: string | null;
}

async function submit(gw: TestGateway, tokens: TokenSetBody): Promise<Sent> {
  const response = await fetch(`${gw.url}/orders/new`, { method: 'POST', headers: { authorization: `Bearer ${tokens.access_token}` } });
  const text = await response.text();
  const id = response.status === 202 ? (JSON.parse(text) as { requestId: string }).requestId : undefined;
  return { status: response.status, id, location: response.headers.get('location') };
}

describe.each(STORE_KINDS)('the %s store going away', (kind) => {
  let store: TestStore;
  let outage: Outage;

  beforeAll(async () => {
    store = new TestStore(await makeStore(kind, redis.url));
    outage = outageOf(kind, store);
  });

  afterAll(async () => {
    await outage?.end();
    await store?.close();
  });

  it('loses no record while 202s flow through a stop and a restart; meanwhile polls answer 503, never 404', async () => {
    const gw = await startTestGateway({ store, config: { requests: { serviceToken: SERVICE_TOKEN, retryAfterS: 1 }, routes: ROUTES() } });
    try {
      const alice = await login(gw.url, 'alice', 'alice-password-1');
      const sent: Sent[] = [];
      const send = async (count: number) => {
        for (let i = 0; i < count; i++) sent.push(await submit(gw, alice));
      };
      await send(5);
      // The token is checked (and cached) while the store answers.
      expect((await poll(gw.url, sent[0]!.id!, alice.access_token)).status).toBe(200);
      const createdBefore = store.created.length;

      await outage.begin();
      await send(10);
      const during = sent.slice(5);
      expect(gw.gateway.requests.queued).toBe(10);
      // Unknown while the store is down, for a queued record, an older one and a made-up id alike.
      // (Concurrently: each waits for the store's deadline.)
      const [report, ...answers] = await Promise.all([
        // A backend reporting meanwhile is told to retry, not that the request is unknown.
        reportStatus(gw.adminUrl!, during[0]!.id!, { status: 'completed' }),
        ...[during[0]!.id!, during[9]!.id!, sent[0]!.id!, randomUUID()].map((id) => poll(gw.url, id, alice.access_token)),
      ]);
      expect(report.status).toBe(503);
      for (const answer of answers) {
        expect(answer.status).toBe(503);
        // Until the store's next reconnect attempt: at most its 2.1 s backoff, rounded up.
        expect(answer.headers.get('retry-after')).toMatch(/^[1-3]$/);
        expect(answer.body).toEqual({
          $diagnoses: [
            { $severity: 'error', $message: expect.any(String), $detail: '503 (Service Unavailable) - temporarily_unavailable: state store unavailable' },
          ],
        });
      }

      await outage.end();
      await send(5);
      await drained(gw);

      // Every client got its 202, with the address to poll.
      expect(sent.map((s) => s.status)).toEqual(Array.from({ length: 20 }, () => 202));
      expect(sent.every((s) => s.location === `/api/v1/requests/${s.id}/status`)).toBe(true);
      // Written in the order the 202s went out.
      expect(store.created.slice(createdBefore)).toEqual(sent.slice(5).map((s) => s.id));
      // And every one is found.
      for (const { id } of sent) expect((await poll(gw.url, id!, alice.access_token)).body).toEqual({ status: 'pending' });
      expect(await metric(gw.adminUrl!, 'gatehouse_async_captures_total', { outcome: 'queued' })).toBeGreaterThanOrEqual(10);
      expect(await metric(gw.adminUrl!, 'gatehouse_outbox_records')).toBe(0);
      expect(await metric(gw.adminUrl!, 'gatehouse_outbox_dropped_total')).toBe(0);
      expect(
        gw.logs
          .entries()
          .filter((entry) => entry.kind === 'proxy')
          .map((entry) => entry.status),
      ).not.toContain(500);
    } finally {
      await outage.end();
      await gw.close();
    }
  });

  it('answers a record still waiting in the outbox once the store is back but before it is written: pending, never 404', async () => {
    const gw = await startTestGateway({ store, config: { requests: { serviceToken: SERVICE_TOKEN }, routes: ROUTES() } });
    try {
      const alice = await login(gw.url, 'alice', 'alice-password-1');
      await submit(gw, alice);
      store.down = true;
      const queued = await submit(gw, alice);
      expect(gw.gateway.requests.queued).toBe(1);
      // The store answers again, but holds every write: the record is still in the outbox.
      const release = store.holdCreates();
      store.down = false;
      try {
        const answer = await poll(gw.url, queued.id!, alice.access_token);
        expect(answer.status).toBe(200);
        expect(answer.body).toEqual({ status: 'pending' });
        expect(gw.gateway.requests.queued).toBe(1);
      } finally {
        release();
      }
      await drained(gw);
    } finally {
      store.down = false;
      await gw.close();
    }
  });

  it('counts and logs records dropped from a full outbox and a full journal; the 202s still go out', async () => {
    // A journal too small for one record: the outbox is all there is.
    const requests = { serviceToken: SERVICE_TOKEN, outboxMaxEntries: 3, journalMaxBytes: 1, unknownAfterOutageS: 1 };
    const gw = await startTestGateway({ store, config: { requests, routes: ROUTES() } });
    try {
      const alice = await login(gw.url, 'alice', 'alice-password-1');
      await submit(gw, alice);
      await outage.begin();
      const sent: Sent[] = [];
      for (let i = 0; i < 5; i++) sent.push(await submit(gw, alice));
      expect(sent.map((s) => s.status)).toEqual([202, 202, 202, 202, 202]);
      // No Location for a record that will not exist.
      expect(sent.map((s) => s.location !== null)).toEqual([true, true, true, false, false]);
      expect(await metric(gw.adminUrl!, 'gatehouse_outbox_dropped_total')).toBe(2);
      expect(await metric(gw.adminUrl!, 'gatehouse_async_captures_total', { outcome: 'dropped' })).toBe(2);
      expect(await metric(gw.adminUrl!, 'gatehouse_outbox_records')).toBe(3);
      const full = gw.logs.entries().filter((entry) => entry.event === 'outbox_full');
      expect(full.map((entry) => [entry.level, entry.requestId])).toEqual([
        [50, sent[3]!.id],
        [50, sent[4]!.id],
      ]);

      await outage.end();
      await drained(gw);
      for (const { id } of sent.slice(0, 3)) expect((await poll(gw.url, id!, alice.access_token)).body).toEqual({ status: 'pending' });
      // Right after the outage nobody can tell a lost record from one still on its way: 503, then 404.
      for (const { id } of sent.slice(3)) {
        await vi.waitFor(async () => expect((await poll(gw.url, id!, alice.access_token)).body).toEqual(NOT_FOUND_BODY), { timeout: 5_000, interval: 200 });
      }
    } finally {
      await outage.end();
      await gw.close();
    }
  });
});

describe.each(STORE_KINDS)('conflicting reports racing on the %s store', (kind) => {
  it('give exactly one winner, also across two instances', async () => {
    const prefix = `test:${randomUUID()}:`;
    const first = await makeStore(kind, redis.url, prefix);
    // Another instance: its own Redis connections; the in-memory store can only be shared.
    const second = kind === 'redis' ? await makeStore(kind, redis.url, prefix) : first;
    const a = await startTestGateway({ store: first, config: { requests: { serviceToken: SERVICE_TOKEN }, routes: ROUTES() } });
    const b = await startTestGateway({ store: second, config: { requests: { serviceToken: SERVICE_TOKEN }, routes: ROUTES() } });
    try {
      const alice = await login(a.url, 'alice', 'alice-password-1');
      for (let round = 0; round < 5; round++) {
        const { id } = await submit(a, alice);
        const reports = Array.from({ length: 20 }, (_, i) => ({ via: i % 4 < 2 ? a : b, status: i % 2 === 0 ? 'completed' : 'failed' }) as const);
        const answers = await Promise.all(reports.map(({ via, status }) => reportStatus(via.adminUrl!, id!, { status })));
        const winners = answers.filter((answer) => (answer.body as { outcome?: string }).outcome === 'applied');
        expect(winners).toHaveLength(1);
        const won = (winners[0]!.body as { status: string }).status;
        answers.forEach((answer, i) => {
          if (reports[i]!.status === won) expect(answer.status).toBe(200);
          else expect(answer.status).toBe(409);
        });
        expect(answers.filter((answer) => (answer.body as { outcome?: string }).outcome === 'already_applied')).toHaveLength(9);
        expect((await poll(a.url, id!, alice.access_token)).body).toEqual({ status: won });
      }
    } finally {
      await a.close();
      await b.close();
      await first.close();
      if (second !== first) await second.close();
    }
  });
});

describe('a gateway restarted on the same Redis', () => {
  it('still answers every record, and goes on recording', async () => {
    // The users and keys outlive the gateway, as files on disk do.
    const shared = await mkdtemp(join(tmpdir(), 'gatehouse-restart-'));
    const usersFile = join(shared, 'users.yaml');
    await writeTestUsers(usersFile, DEFAULT_TEST_USERS);
    const config = {
      store: { url: redis.url, keyPrefix: `test:${randomUUID()}:` },
      identity: { usersFile, watch: false },
      tokens: { keysFile: join(shared, 'keys.json') },
      requests: { serviceToken: SERVICE_TOKEN },
      routes: ROUTES(),
    };
    try {
      const before = await startTestGateway({ config });
      let alice: TokenSetBody;
      const expected = new Map<string, string>();
      try {
        alice = await login(before.url, 'alice', 'alice-password-1');
        for (let i = 0; i < 6; i++) expected.set((await submit(before, alice)).id!, 'pending');
        const ids = [...expected.keys()];
        for (const [id, status] of [
          [ids[0]!, 'completed'],
          [ids[1]!, 'failed'],
          [ids[2]!, 'completed'],
        ] as const) {
          expect((await reportStatus(before.adminUrl!, id, { status })).status).toBe(200);
          expected.set(id, status);
        }
      } finally {
        await before.close();
      }

      const after = await startTestGateway({ config });
      try {
        // The same token: its session lives in Redis, its key in the shared file.
        for (const [id, status] of expected) expect((await poll(after.url, id, alice.access_token)).body).toEqual({ status });
        const pending = [...expected].find(([, status]) => status === 'pending')![0];
        expect((await reportStatus(after.adminUrl!, pending, { status: 'completed' })).body).toMatchObject({ outcome: 'applied' });
        const fresh = await submit(after, alice);
        expect((await poll(after.url, fresh.id!, alice.access_token)).body).toEqual({ status: 'pending' });
      } finally {
        await after.close();
      }
    } finally {
      await rm(shared, { recursive: true, force: true });
    }
  });
});
