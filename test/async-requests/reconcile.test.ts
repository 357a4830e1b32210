// Routes that name the upstream's own status URL, on both stores: a client's
// poll of a pending request makes the gateway ask the upstream — once per id
// at a time, at most once per interval, within a timeout — and a terminal
// answer is recorded. An upstream that is down, slow or talking nonsense
// leaves the request pending: it is never turned into `failed`.
//
// No test waits on the clock: an interval passes by a long poll, which asks
// again at it, or by a faked Date; a timeout shows as the question being
// abandoned.
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { login, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { testRedisUrl } from '../helpers/redis-server.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';
import {
  SERVICE_TOKEN,
  STORE_KINDS,
  TestStore,
  makeStore,
  metric,
  poll,
  reportStatus,
  startScriptedUpstream,
  type ScriptedUpstream,
  EVENTUALLY,
} from './support.js';

const INTERVAL_MS = 300;
const TIMEOUT_MS = 300;
/** The interval and timeout of the `/patient` route: no test outlasts them. */
const PATIENT_INTERVAL_MS = 600_000;
const PATIENT_TIMEOUT_MS = 60_000;
/** Longer than a long poll of `wait: MAX_WAIT_S` waits on a pending record. */
const MAX_WAIT_S = 3;
const LONG_POLL_TEST = { timeout: 10_000 };

/** The upstream's status service: answers per id as the test says (default pending), counting questions. */
interface StatusService extends Upstream {
  answers: Map<string, (res: ServerResponse) => void>;
  asked(id: string): number;
}

async function startStatusService(): Promise<StatusService> {
  const answers = new Map<string, (res: ServerResponse) => void>();
  const counts = new Map<string, number>();
  const upstream = await startUpstream((req, res) => {
    const id = (req.url ?? '').split('/').pop() ?? '';
    counts.set(id, (counts.get(id) ?? 0) + 1);
    const answer = answers.get(id);
    if (answer) answer(res);
    else json(res, 200, { status: 'pending' });
  });
  return Object.assign(upstream, { answers, asked: (id: string) => counts.get(id) ?? 0 });
}

function json(res: ServerResponse, statusCode: number, body: unknown): void {
  res.writeHead(statusCode, { 'content-type': 'application/json' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

/** An address where nothing listens (a server bound, then closed). */
async function deadOrigin(): Promise<string> {
  const gone = await startUpstream();
  await gone.close();
  return gone.url;
}

describe.each(STORE_KINDS)('reconciling with the upstream status URL on the %s store', (kind) => {
  let redis: { url: string; close(): Promise<void> } | undefined;
  let store: TestStore;
  let up: ScriptedUpstream;
  let status: StatusService;
  let gw: TestGateway;
  let alice: TokenSetBody;

  beforeAll(async () => {
    redis = kind === 'redis' ? await testRedisUrl() : undefined;
    store = new TestStore(await makeStore(kind, redis?.url ?? ''));
    [up, status] = await Promise.all([startScriptedUpstream(), startStatusService()]);
    const reconcile = { statusPollIntervalMs: INTERVAL_MS, statusTimeoutMs: TIMEOUT_MS };
    gw = await startTestGateway({
      store,
      config: {
        requests: { serviceToken: SERVICE_TOKEN, maxWaitS: MAX_WAIT_S },
        routes: [
          { name: 'orders', prefix: '/orders', upstreams: [up.url], async: { statusUrlTemplate: `${status.url}/jobs/{requestId}`, ...reconcile } },
          {
            name: 'patient',
            prefix: '/patient',
            upstreams: [up.url],
            async: { statusUrlTemplate: `${status.url}/jobs/{requestId}`, statusPollIntervalMs: PATIENT_INTERVAL_MS, statusTimeoutMs: PATIENT_TIMEOUT_MS },
          },
          { name: 'down', prefix: '/down', upstreams: [up.url], async: { statusUrlTemplate: `${await deadOrigin()}/jobs/{requestId}`, ...reconcile } },
          { name: 'plain', prefix: '/plain', upstreams: [up.url] },
        ],
      },
    });
    alice = await login(gw.url, 'alice', 'alice-password-1');
  });

  afterAll(async () => {
    await gw?.close();
    await store?.close();
    await Promise.all([up?.close(), status?.close()]);
    await redis?.close();
  });

  async function accept(route = '/orders'): Promise<string> {
    const response = await fetch(`${gw.url}${route}/new`, { method: 'POST', headers: { authorization: `Bearer ${alice.access_token}` } });
    expect(response.status).toBe(202);
    return ((await response.json()) as { requestId: string }).requestId;
  }

  const statusOf = async (id: string, wait?: string) => (await poll(gw.url, id, alice.access_token, wait === undefined ? {} : { wait })).body;

  it("keeps the request's own status URL in its record", async () => {
    const id = await accept();
    expect((await store.inner.getRequest(id))!.statusUrl).toBe(`${status.url}/jobs/${id}`);
    expect((await store.inner.getRequest(await accept('/plain')))!.statusUrl).toBeUndefined();
  });

  it('records a completion the upstream reports, and stops asking then', LONG_POLL_TEST, async () => {
    const id = await accept();
    expect(await statusOf(id)).toEqual({ status: 'pending' });
    expect(status.asked(id)).toBe(1);
    const before = await metric(gw.adminUrl!, 'gatehouse_request_transitions_total', { source: 'upstream', outcome: 'applied' });
    status.answers.set(id, (res) => json(res, 200, { status: 'completed', extra: 'ignored' }));
    // A long poll asks again once the interval has passed.
    expect(await statusOf(id, String(MAX_WAIT_S))).toEqual({ status: 'completed' });
    expect((await store.inner.getRequest(id))!.status).toBe('completed');
    expect(await metric(gw.adminUrl!, 'gatehouse_request_transitions_total', { source: 'upstream', outcome: 'applied' })).toBe(before + 1);
    // Recorded for good: the backend's own report is a repeat, and the upstream is not asked again.
    expect((await reportStatus(gw.adminUrl!, id, { status: 'completed' })).body).toMatchObject({ outcome: 'already_applied' });
    expect(await statusOf(id, String(MAX_WAIT_S))).toEqual({ status: 'completed' });
    expect(status.asked(id)).toBe(2);
  });

  it('records a failure the upstream reports', async () => {
    const id = await accept();
    status.answers.set(id, (res) => json(res, 200, { status: 'failed' }));
    expect(await statusOf(id)).toEqual({ status: 'failed' });
    expect((await store.inner.getRequest(id))!.status).toBe('failed');
  });

  it('does not ask about a request that has ended already', async () => {
    const id = await accept();
    await reportStatus(gw.adminUrl!, id, { status: 'failed' });
    status.answers.set(id, (res) => json(res, 200, { status: 'completed' }));
    expect(await statusOf(id)).toEqual({ status: 'failed' });
    expect(status.asked(id)).toBe(0);
  });

  it('asks once for many concurrent polls (single flight)', async () => {
    const id = await accept('/patient');
    // The upstream holds its answer until every poll has joined the question.
    let answer!: () => void;
    const asked = new Promise<void>((resolve) => {
      status.answers.set(id, (res) => {
        answer = () => json(res, 200, { status: 'completed' });
        resolve();
      });
    });
    const reads = store.answered.getRequest;
    const answers = Promise.all(Array.from({ length: 12 }, () => statusOf(id)));
    await asked;
    // Each poll has its record, and asks (or joins) right after: one turn of the event loop.
    await vi.waitFor(() => expect(store.answered.getRequest).toBe(reads + 12), EVENTUALLY);
    await new Promise((resolve) => setImmediate(resolve));
    answer();
    // A poll that had not joined would have found the interval running and answered pending.
    expect(await answers).toEqual(Array.from({ length: 12 }, () => ({ status: 'completed' })));
    expect(status.asked(id)).toBe(1);
  });

  it('asks at most once per statusPollIntervalMs for one request, and again once it has passed', async () => {
    // Time stands still from here, and then jumps: the interval is the reconciler's reading of Date.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const id = await accept('/patient');
      for (let i = 0; i < 5; i++) expect(await statusOf(id)).toEqual({ status: 'pending' });
      expect(status.asked(id)).toBe(1);
      // The refresh token: the access token does not live that long.
      vi.setSystemTime(Date.now() + PATIENT_INTERVAL_MS - 1);
      expect((await poll(gw.url, id, alice.refresh_token)).body).toEqual({ status: 'pending' });
      expect(status.asked(id)).toBe(1);
      vi.setSystemTime(Date.now() + 1);
      expect((await poll(gw.url, id, alice.refresh_token)).body).toEqual({ status: 'pending' });
      expect(status.asked(id)).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('asks again at its interval during a long poll, and answers as soon as the upstream says so', LONG_POLL_TEST, async () => {
    const id = await accept();
    // Pending when first asked (by the poll itself), completed when asked again.
    status.answers.set(id, (res) => {
      status.answers.set(id, (again) => json(again, 200, { status: 'completed' }));
      json(res, 200, { status: 'pending' });
    });
    const answer = await poll(gw.url, id, alice.access_token, { wait: String(MAX_WAIT_S) });
    expect(answer.body).toEqual({ status: 'completed' });
    expect(status.asked(id)).toBe(2);
  });

  it('leaves a request pending when the status URL is down, never failed', async () => {
    const id = await accept('/down');
    const answer = await poll(gw.url, id, alice.access_token);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ status: 'pending' });
    expect(answer.headers.get('retry-after')).not.toBeNull();
    expect((await store.inner.getRequest(id))!.status).toBe('pending');
    expect(gw.logs.entries()).toContainEqual(expect.objectContaining({ msg: expect.stringMatching(/upstream status URL unavailable/), requestId: id }));
  });

  it('gives up on a status URL that does not answer after statusTimeoutMs, leaving the request pending', LONG_POLL_TEST, async () => {
    const id = await accept();
    // Never answers; the gateway must hang up.
    const abandoned = new Promise<void>((resolve) => {
      status.answers.set(id, (res) => res.once('close', () => resolve()));
    });
    const answer = await poll(gw.url, id, alice.access_token);
    expect(answer.body).toEqual({ status: 'pending' });
    await abandoned;
    expect((await store.inner.getRequest(id))!.status).toBe('pending');
  });

  it.each([
    ['a 500', (res: ServerResponse) => json(res, 500, { status: 'failed' })],
    ['a 404', (res: ServerResponse) => json(res, 404, { status: 'failed' })],
    ['a body that is not JSON', (res: ServerResponse) => json(res, 200, 'completed')],
    ['an unknown status', (res: ServerResponse) => json(res, 200, { status: 'done' })],
    ['a status in the wrong case', (res: ServerResponse) => json(res, 200, { status: 'FAILED' })],
    ['an oversized body', (res: ServerResponse) => json(res, 200, { status: 'failed', pad: 'x'.repeat(64 * 1024) })],
    [
      'a cut-off answer',
      (res: ServerResponse) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
        res.end('{"status":');
        res.destroy();
      },
    ],
  ])('leaves a request pending when the status URL answers %s', async (_case, answer) => {
    const id = await accept();
    status.answers.set(id, answer);
    expect(await statusOf(id)).toEqual({ status: 'pending' });
    expect(status.asked(id)).toBe(1);
    expect((await store.inner.getRequest(id))!.status).toBe('pending');
  });
});
