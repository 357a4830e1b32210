// The status endpoint (spec 4.3) on both stores: both paths, both methods,
// access and refresh tokens; only the owner sees a request, everyone else
// gets the same 404 as for an id that never existed; long polls answer when
// the status changes, also when it is changed through another instance.
//
// Long polls are given a wait far longer than the test's own timeout: one
// that answered only when its time ran out would fail the test, so none is
// timed.
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { login, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { advanceStoreClock } from '../helpers/store-clock.js';
import {
  NOT_FOUND_BODY,
  SERVICE_TOKEN,
  STORE_KINDS,
  TestStore,
  makeStore,
  poll,
  reportStatus,
  type ScriptedUpstream,
  startRequestsFixture,
  type RequestsFixture,
  EVENTUALLY,
} from './support.js';

/** Far longer than any test here may take. */
const LONG_WAIT_S = 30;
/** A long poll's test fails by this timeout if the poll waits out its wait. */
const LONG_POLL_TEST = { timeout: 10_000 };

describe.each(STORE_KINDS)('the status endpoint on the %s store', (kind) => {
  let fixture: RequestsFixture;
  let keyPrefix: string;
  let store: TestStore;
  let up: ScriptedUpstream;
  let gw: TestGateway;
  let alice: TokenSetBody;
  let bob: TokenSetBody;

  const routes = (upstream: ScriptedUpstream = up) => [{ name: 'orders', prefix: '/orders', upstreams: [upstream.url] }];

  beforeAll(async () => {
    fixture = await startRequestsFixture(kind, (upstream) => ({
      requests: { serviceToken: SERVICE_TOKEN, retryAfterS: 2, maxWaitS: LONG_WAIT_S },
      routes: routes(upstream),
    }));
    ({ store, up, gw, alice, bob, keyPrefix } = fixture);
  });
  afterAll(() => fixture?.close());

  /** A fresh asynchronous request made by `tokens`' user through `on`; its id. */
  async function accept(on: TestGateway = gw, tokens: TokenSetBody = alice): Promise<string> {
    const response = await fetch(`${on.url}/orders/new`, { method: 'POST', headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(response.status).toBe(202);
    return ((await response.json()) as { requestId: string }).requestId;
  }

  describe('answers', () => {
    const shapes = [
      ['GET', '/api/v1'],
      ['POST', '/api/v1'],
      ['GET', '/v1'],
      ['POST', '/v1'],
    ] as const;

    it.each(shapes)('%s %s/requests/<id>/status with an access token and with a refresh token', async (method, base) => {
      const id = await accept();
      for (const token of [alice.access_token, alice.refresh_token]) {
        const answer = await poll(gw.url, id, token, { method, base });
        expect(answer.status).toBe(200);
        expect(answer.body).toEqual({ status: 'pending' });
        expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
        expect(answer.headers.get('retry-after')).toBe('2');
        expect(answer.headers.get('cache-control')).toBe('no-store');
      }
    });

    it.each([
      ['no body', undefined, undefined],
      ['an empty JSON body', '', 'application/json'],
      ['a JSON body', '{"anything": true}', 'application/json'],
      ['malformed JSON', '{"oops', 'application/json'],
      ['a text body', 'hello', 'text/plain'],
      ['a body without a type', 'raw bytes', undefined],
    ])('takes a POST with %s, ignoring it', async (_case, body, type) => {
      const id = await accept();
      const answer = await poll(gw.url, id, alice.access_token, {
        method: 'POST',
        ...(body === undefined ? {} : { body }),
        ...(type === undefined ? {} : { headers: { 'content-type': type } }),
      });
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ status: 'pending' });
    });

    it('reports completed and failed, without Retry-After', async () => {
      const [done, broken] = await Promise.all([accept(), accept()]);
      expect((await reportStatus(gw.adminUrl!, done, { status: 'completed' })).status).toBe(200);
      expect((await reportStatus(gw.adminUrl!, broken, { status: 'failed' })).status).toBe(200);
      for (const [id, status] of [
        [done, 'completed'],
        [broken, 'failed'],
      ] as const) {
        const answer = await poll(gw.url, id, alice.access_token);
        expect(answer.body).toEqual({ status });
        expect(answer.headers.get('retry-after')).toBeNull();
        expect(answer.headers.get('cache-control')).toBe('no-store');
      }
    });

    it('finds an id written in upper case', async () => {
      const id = await accept();
      expect((await poll(gw.url, id.toUpperCase(), alice.access_token)).body).toEqual({ status: 'pending' });
    });

    it('costs one store read per poll: the bearer check is served from its cache', async () => {
      const id = await accept();
      await poll(gw.url, id, alice.access_token);
      const sessions = store.calls.getSession;
      const reads = store.calls.getRequest;
      for (let i = 0; i < 5; i++) expect((await poll(gw.url, id, alice.access_token)).status).toBe(200);
      expect(store.calls.getSession).toBe(sessions);
      expect(store.calls.getRequest).toBe(reads + 5);
    });
  });

  describe('refuses', () => {
    it.each([
      ['no Authorization header', {}, 'Bearer realm="gatehouse"'],
      ['a garbage token', { authorization: 'Bearer not.a.token' }, /^Bearer realm="gatehouse", error="invalid_token"/],
      ['a Basic header', { authorization: 'Basic YWxpY2U6eA==' }, /error="invalid_token"/],
    ])('%s with 401 and a challenge, on both paths and methods', async (_case, headers, challenge) => {
      const id = await accept();
      for (const [method, base] of [
        ['GET', '/api/v1'],
        ['POST', '/v1'],
      ] as const) {
        const answer = await poll(gw.url, id, undefined, { method, base, headers });
        expect(answer.status).toBe(401);
        expect(answer.headers.get('www-authenticate')).toMatch(challenge);
        expect(answer.body).toEqual({
          $diagnoses: [expect.objectContaining({ $severity: 'error', $detail: expect.stringMatching(/^401 \(Unauthorized\) - invalid_token: /) })],
        });
      }
    });

    it('asks for a token before it says anything about an id', async () => {
      expect((await poll(gw.url, 'not-a-uuid', undefined)).status).toBe(401);
      expect((await poll(gw.url, randomUUID(), undefined)).status).toBe(401);
    });

    it("shows a request to nobody but its owner: someone else's id is a 404 like an unknown one", async () => {
      const id = await accept(gw, alice);
      const others = await poll(gw.url, id, bob.access_token);
      const unknown = await poll(gw.url, randomUUID(), bob.access_token);
      expect(others.status).toBe(404);
      expect(others.body).toEqual(NOT_FOUND_BODY);
      expect(unknown.body).toEqual(others.body);
      // Not even the refresh token or the other path of someone else gets in.
      expect((await poll(gw.url, id, bob.refresh_token, { method: 'POST', base: '/v1' })).status).toBe(404);
      // While the owner still does.
      expect((await poll(gw.url, id, alice.access_token)).status).toBe(200);
    });

    it.each([
      ['not a UUID', 'abc'],
      ['a UUID with a bad digit', '1234567g-1234-1234-1234-123456789012'],
      ['a UUID and more', `${randomUUID()}x`],
      ['an extra segment', `${randomUUID()}/more`],
      ['an encoded slash', `${randomUUID()}%2Fx`],
      ['a huge id', 'a'.repeat(5000)],
    ])('an id that is %s with the same 404', async (_case, id) => {
      const answer = await poll(gw.url, id, alice.access_token);
      expect(answer.status).toBe(404);
      expect(answer.body).toEqual(NOT_FOUND_BODY);
    });

    it('a path that is not .../status with the same 404', async () => {
      const id = await accept();
      const response = await fetch(`${gw.url}/api/v1/requests/${id}/statusx`, { headers: { authorization: `Bearer ${alice.access_token}` } });
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual(NOT_FOUND_BODY);
    });
  });

  describe('long polling (?wait=)', () => {
    const wait = String(LONG_WAIT_S);

    /** Resolves once `count` long polls wait on the gateway. */
    async function polling(on: TestGateway = gw, count = 1): Promise<void> {
      await vi.waitFor(() => expect(on.gateway.requests.watching).toBe(count), EVENTUALLY);
    }

    it('answers as soon as the status changes, reported through the internal API', LONG_POLL_TEST, async () => {
      const id = await accept();
      const waiting = poll(gw.url, id, alice.access_token, { wait });
      await polling();
      expect((await reportStatus(gw.adminUrl!, id, { status: 'completed' })).status).toBe(200);
      const answer = await waiting;
      expect(answer.body).toEqual({ status: 'completed' });
      expect(answer.headers.get('retry-after')).toBeNull();
    });

    it('answers as soon as the status changes through ANOTHER gateway instance', LONG_POLL_TEST, async () => {
      // Its own store object (its own Redis connections and subscriber), as
      // another process would have; the in-memory store can only be shared.
      const otherStore = kind === 'redis' ? await makeStore(kind, fixture.redisUrl!, keyPrefix) : store.inner;
      const other = await startTestGateway({ store: otherStore, config: { requests: { serviceToken: SERVICE_TOKEN }, routes: routes() } });
      try {
        const id = await accept();
        const waiting = poll(gw.url, id, alice.access_token, { wait, method: 'POST', base: '/v1' });
        await polling();
        const put = await reportStatus(other.adminUrl!, id, { status: 'failed' });
        expect(put.body).toEqual({ id, status: 'failed', outcome: 'applied' });
        expect((await waiting).body).toEqual({ status: 'failed' });
      } finally {
        await other.close();
        if (otherStore !== store.inner) await otherStore.close();
      }
    });

    it('keeps nobody waiting on a request that is not theirs', LONG_POLL_TEST, async () => {
      const id = await accept(gw, alice);
      const answer = await poll(gw.url, id, bob.access_token, { wait });
      expect(answer.status).toBe(404);
    });

    // An interrupted feed is an outage: for a while after it, unknown ids
    // answer 503 rather than 404 (request-tracker.ts), so the 404 cases of
    // this group come before it.
    it('reads the record again when the change feed was interrupted, so a missed change still ends the wait', LONG_POLL_TEST, async () => {
      const id = await accept();
      let answered = false;
      const waiting = poll(gw.url, id, alice.access_token, { wait }).finally(() => {
        answered = true;
      });
      await polling();
      // The change happens while this instance hears nothing of it…
      store.muteStatusChanges = true;
      try {
        const muted = store.muted;
        expect(await store.inner.transitionRequest(id, 'completed', 60_000)).toBe('applied');
        // (the store's own event, and on Redis its echo too, reached the wrapper and went no further)
        await vi.waitFor(() => expect(store.muted).toBe(muted + (kind === 'redis' ? 2 : 1)), EVENTUALLY);
        expect(answered).toBe(false);
        expect(gw.gateway.requests.watching).toBe(1);
        // …until the feed is back: then the record is read again.
        store.resumeFeed();
        expect((await waiting).body).toEqual({ status: 'completed' });
      } finally {
        store.muteStatusChanges = false;
      }
    });

    it('answers at once for a request that has ended already', LONG_POLL_TEST, async () => {
      const id = await accept();
      await reportStatus(gw.adminUrl!, id, { status: 'completed' });
      const answer = await poll(gw.url, id, alice.access_token, { wait });
      expect(answer.body).toEqual({ status: 'completed' });
    });

    it('holds a pending answer while it waits, and answers pending when the wait is over', LONG_POLL_TEST, async () => {
      const id = await accept();
      const waiting = poll(gw.url, id, alice.access_token, { wait: '1' });
      await polling();
      const answer = await waiting;
      expect(answer.body).toEqual({ status: 'pending' });
      expect(answer.headers.get('retry-after')).toBe('2');
      expect(gw.gateway.requests.watching).toBe(0);
    });

    it('waits no longer than requests.maxWaitS, whatever the client asks', LONG_POLL_TEST, async () => {
      const brief = await startTestGateway({ store, config: { requests: { serviceToken: SERVICE_TOKEN, maxWaitS: 1 }, routes: routes() } });
      try {
        const aliceHere = await login(brief.url, 'alice', 'alice-password-1');
        const id = await accept(brief, aliceHere);
        const waiting = poll(brief.url, id, aliceHere.access_token, { wait: '300' });
        await polling(brief);
        expect((await waiting).body).toEqual({ status: 'pending' });
      } finally {
        await brief.close();
      }
    });

    it('wait=0 answers at once', LONG_POLL_TEST, async () => {
      const id = await accept();
      const answer = await poll(gw.url, id, alice.access_token, { wait: '0' });
      expect(answer.body).toEqual({ status: 'pending' });
    });

    it.each([['abc'], ['-1'], [''], ['1e3'], ['0x10'], ['1.2.3']])('refuses wait=%s with 400', async (wait) => {
      const id = await accept();
      const answer = await poll(gw.url, id, alice.access_token, { wait });
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({
        $diagnoses: [expect.objectContaining({ $detail: '400 (Bad Request) - invalid_request: wait must be a number of seconds' })],
      });
    });

    it('lets go of the watch when the client gives up', async () => {
      const id = await accept();
      // node:http, not fetch: an aborted fetch makes undici open a fresh idle
      // connection, which would hold the gateway's close() until headersTimeout.
      const req = httpRequest(`${gw.url}/api/v1/requests/${id}/status?wait=${wait}`, {
        agent: false,
        headers: { authorization: `Bearer ${alice.access_token}` },
      });
      req.on('error', () => {});
      req.end();
      await polling();
      req.destroy();
      await polling(gw, 0);
    });
  });
});

describe.each(STORE_KINDS)('retention on the %s store', (kind) => {
  const RETENTION_S = 60;
  let fixture: RequestsFixture;
  let gw: TestGateway;
  let alice: TokenSetBody;
  let raw: Redis | undefined;

  beforeAll(async () => {
    fixture = await startRequestsFixture(kind, (upstream) => ({
      requests: { serviceToken: SERVICE_TOKEN, retentionS: RETENTION_S },
      routes: [{ name: 'orders', prefix: '/orders', upstreams: [upstream.url] }],
    }));
    ({ gw, alice } = fixture);
    raw = kind === 'redis' ? new Redis(fixture.redisUrl!) : undefined;
  });
  afterAll(async () => {
    await raw?.quit();
    await fixture?.close();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Time passes for the gateway and its store, without waiting (Date is faked in each test). */
  const elapse = (seconds: number) => advanceStoreClock(seconds * 1000, raw && { client: raw, keyPrefix: fixture.keyPrefix });
  // The refresh token: an access token would expire before the records do.
  const statusOf = (id: string) => poll(gw.url, id, alice.refresh_token);

  async function accept(): Promise<string> {
    const response = await fetch(`${gw.url}/orders/new`, { method: 'POST', headers: { authorization: `Bearer ${alice.access_token}` } });
    return ((await response.json()) as { requestId: string }).requestId;
  }

  it('forgets a pending record after its retention: 404', async () => {
    const id = await accept();
    vi.useFakeTimers({ toFake: ['Date'] });
    await elapse(RETENTION_S - 1);
    expect((await statusOf(id)).status).toBe(200);
    await elapse(1);
    const answer = await statusOf(id);
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual(NOT_FOUND_BODY);
  });

  it('keeps a terminal record for a retention counted from its change, then forgets it', async () => {
    const id = await accept();
    vi.useFakeTimers({ toFake: ['Date'] });
    await elapse(RETENTION_S / 2);
    expect((await reportStatus(gw.adminUrl!, id, { status: 'completed' })).status).toBe(200);
    // Past the pending record's own expiry, but within the terminal one's.
    await elapse(RETENTION_S / 2 + 10);
    expect((await statusOf(id)).body).toEqual({ status: 'completed' });
    await elapse(RETENTION_S / 2 - 10);
    expect((await statusOf(id)).status).toBe(404);
  });
});
