// Capture of upstream 202s (spec 2.5, 4.4) on both stores: a request is
// recorded before its 202 reaches the client, the body goes out byte for
// byte, Location/Retry-After are added only where missing and wanted, and
// everything that is not a recordable answer passes through untouched,
// counted in /metrics and logged.
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { jwtPayload, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { send } from '../helpers/http-client.js';
import {
  NOT_FOUND_BODY,
  SERVICE_TOKEN,
  STORE_KINDS,
  TestStore,
  accepted,
  metric,
  poll,
  type ScriptedUpstream,
  startRequestsFixture,
  type RequestsFixture,
  EVENTUALLY,
} from './support.js';

const SMALL_BOUND = 256;

describe.each(STORE_KINDS)('202 capture on the %s store', (kind) => {
  let fixture: RequestsFixture;
  let store: TestStore;
  let up: ScriptedUpstream;
  let gw: TestGateway;
  let alice: TokenSetBody;
  let bob: TokenSetBody;

  beforeAll(async () => {
    fixture = await startRequestsFixture(kind, (upstream) => ({
      requests: { serviceToken: SERVICE_TOKEN, retryAfterS: 3 },
      routes: [
        { name: 'orders', prefix: '/orders', upstreams: [upstream.url] },
        { name: 'jobs', prefix: '/jobs', upstreams: [upstream.url], async: { requestIdField: 'jobId' } },
        { name: 'plain', prefix: '/plain', upstreams: [upstream.url], async: { addHeaders: false } },
        { name: 'small', prefix: '/small', upstreams: [upstream.url], async: { maxBodyBytes: SMALL_BOUND } },
        { name: 'public', prefix: '/public', upstreams: [upstream.url], auth: 'none' },
        { name: 'untracked', prefix: '/untracked', upstreams: [upstream.url], async: { capture: false } },
      ],
    }));
    ({ store, up, gw, alice, bob } = fixture);
  });
  afterAll(() => fixture?.close());

  const as = (tokens: TokenSetBody) => ({ authorization: `Bearer ${tokens.access_token}` });

  /** node:http, not fetch: the bytes exactly as sent (fetch would try to gunzip a gzip-labelled body). */
  async function submit(path: string, tokens: TokenSetBody | null = alice): Promise<{ response: { status: number; headers: Headers }; bytes: Buffer }> {
    const answer = await send(`${gw.url}${path}`, {
      method: 'POST',
      headers: { ...(tokens ? as(tokens) : {}), 'content-type': 'application/json' },
      body: '{}',
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) if (typeof value === 'string') headers.set(name, value);
    return { response: { status: answer.status, headers }, bytes: answer.body };
  }

  it('records the request before the 202 reaches the client: a poll at once finds it pending', async () => {
    // The store holds the record back: had the 202 gone out first, the client
    // would have it now, and a poll would race the record and get a 404.
    const release = store.holdCreates();
    let answered = false;
    const submitted = submit('/orders/new').finally(() => {
      answered = true;
    });
    try {
      const attempts = store.calls.createRequest;
      await vi.waitFor(() => expect(store.calls.createRequest).toBe(attempts + 1), EVENTUALLY);
      expect(answered).toBe(false);
    } finally {
      release();
    }
    const { response, bytes } = await submitted;
    expect(response.status).toBe(202);
    const { requestId } = JSON.parse(bytes.toString()) as { requestId: string };
    const answer = await poll(gw.url, requestId, alice.access_token);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ status: 'pending' });
  });

  it('stores who asked, the route, the upstream and the times', async () => {
    const before = Date.now();
    const { bytes } = await submit('/orders/new');
    const { requestId } = JSON.parse(bytes.toString()) as { requestId: string };
    const record = await store.inner.getRequest(requestId);
    expect(record).toEqual({
      id: requestId,
      status: 'pending',
      sub: jwtPayload(alice.access_token).sub,
      route: 'orders',
      upstream: up.url,
      createdAt: expect.any(Number),
      updatedAt: expect.any(Number),
    });
    expect(record!.createdAt).toBeGreaterThanOrEqual(before);
    expect(record!.createdAt).toBeLessThanOrEqual(Date.now());
    expect(record!.updatedAt).toBe(record!.createdAt);
  });

  it('passes the body on byte for byte, stores the id in lower case and adds Location and Retry-After', async () => {
    const id = randomUUID().toUpperCase();
    const body = Buffer.from(`\u{FEFF}{ "requestId" : "${id}",\n  "note": "h\u00e9llo \u2713",  "n": 1.50, "requestIdX": null }\n`);
    up.on('/orders/exact', (_req, res) => accepted(res, body, { 'x-upstream': 'kept' }));
    const { response, bytes } = await submit('/orders/exact');
    expect(response.status).toBe(202);
    expect(bytes.equals(body)).toBe(true);
    expect(response.headers.get('content-length')).toBe(String(body.length));
    expect(response.headers.get('x-upstream')).toBe('kept');
    expect(response.headers.get('location')).toBe(`/api/v1/requests/${id.toLowerCase()}/status`);
    expect(response.headers.get('retry-after')).toBe('3');
    expect((await store.inner.getRequest(id.toLowerCase()))?.status).toBe('pending');
    // The Location the client got leads to the status.
    const status = await fetch(new URL(response.headers.get('location')!, gw.url), { headers: as(alice) });
    expect(await status.json()).toEqual({ status: 'pending' });
  });

  it('captures a chunked 202 (no Content-Length) and sends exactly its bytes', async () => {
    const id = randomUUID();
    const parts = ['{"requestId":', `"${id}"`, ', "more": [1,2,3]}'];
    up.on('/orders/chunked', (_req, res) => {
      res.writeHead(202, { 'content-type': 'application/json; charset=utf-8' });
      for (const part of parts) res.write(part);
      res.end();
    });
    const { response, bytes } = await submit('/orders/chunked');
    expect(response.status).toBe(202);
    expect(bytes.toString()).toBe(parts.join(''));
    expect(response.headers.get('location')).toBe(`/api/v1/requests/${id}/status`);
    expect((await poll(gw.url, id, alice.access_token)).body).toEqual({ status: 'pending' });
  });

  it("keeps the upstream's own Location and Retry-After, and adds only the missing one", async () => {
    const both = randomUUID();
    up.on('/orders/both', (_req, res) => accepted(res, { requestId: both }, { location: '/orders/jobs/1', 'retry-after': '10' }));
    const first = await submit('/orders/both');
    expect(first.response.headers.get('location')).toBe('/orders/jobs/1');
    expect(first.response.headers.get('retry-after')).toBe('10');

    const onlyLocation = randomUUID();
    up.on('/orders/location', (_req, res) => accepted(res, { requestId: onlyLocation }, { location: '/orders/jobs/2' }));
    const second = await submit('/orders/location');
    expect(second.response.headers.get('location')).toBe('/orders/jobs/2');
    expect(second.response.headers.get('retry-after')).toBe('3');
    expect((await poll(gw.url, both, alice.access_token)).status).toBe(200);
  });

  it('adds no headers where the route says addHeaders: false, and still records', async () => {
    const id = randomUUID();
    up.on('/plain/go', (_req, res) => accepted(res, { requestId: id }));
    const { response } = await submit('/plain/go');
    expect(response.status).toBe(202);
    expect(response.headers.get('location')).toBeNull();
    expect(response.headers.get('retry-after')).toBeNull();
    expect((await poll(gw.url, id, alice.access_token)).body).toEqual({ status: 'pending' });
  });

  it("reads the id from the route's requestIdField", async () => {
    const jobId = randomUUID();
    const decoy = randomUUID();
    up.on('/jobs/run', (_req, res) => accepted(res, { requestId: decoy, jobId }));
    const { response } = await submit('/jobs/run');
    expect(response.headers.get('location')).toBe(`/api/v1/requests/${jobId}/status`);
    expect((await poll(gw.url, jobId, alice.access_token)).body).toEqual({ status: 'pending' });
    expect((await poll(gw.url, decoy, alice.access_token)).status).toBe(404);
  });

  const passThrough: Array<[string, string, string, () => { body: Buffer; headers: Record<string, string> }]> = [
    ['a text body', '/orders/text', 'not_json', () => ({ body: Buffer.from('accepted, thanks'), headers: { 'content-type': 'text/plain' } })],
    ['broken JSON', '/orders/broken', 'not_json', () => ({ body: Buffer.from(`{"requestId":"${randomUUID()}"`), headers: {} })],
    [
      'JSON under a non-JSON type',
      '/orders/typed',
      'not_json',
      () => ({ body: Buffer.from(`{"requestId":"${randomUUID()}"}`), headers: { 'content-type': 'text/html' } }),
    ],
    [
      'invalid UTF-8',
      '/orders/bytes',
      'not_json',
      () => ({ body: Buffer.concat([Buffer.from('{"requestId":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]), headers: {} }),
    ],
    [
      'a compressed body',
      '/orders/gzip',
      'not_json',
      () => ({ body: Buffer.from(`{"requestId":"${randomUUID()}"}`), headers: { 'content-encoding': 'gzip' } }),
    ],
    [
      'a body over the bound',
      '/small/big',
      'too_large',
      () => ({ body: Buffer.from(JSON.stringify({ requestId: randomUUID(), pad: 'x'.repeat(SMALL_BOUND) })), headers: {} }),
    ],
    ['no requestId field', '/orders/nofield', 'no_request_id', () => ({ body: Buffer.from(JSON.stringify({ id: randomUUID() })), headers: {} })],
    ['a requestId that is no UUID', '/orders/notuuid', 'no_request_id', () => ({ body: Buffer.from(JSON.stringify({ requestId: '12345' })), headers: {} })],
    ['a requestId that is no string', '/orders/number', 'no_request_id', () => ({ body: Buffer.from('{"requestId": 42}'), headers: {} })],
    ['a JSON array', '/orders/array', 'no_request_id', () => ({ body: Buffer.from(`["${randomUUID()}"]`), headers: {} })],
  ];

  it.each(passThrough)('passes %s through untouched, counted as %s', async (_case, path, outcome, make) => {
    const { body, headers } = make();
    up.on(path, (_req, res) => accepted(res, body, headers));
    const counted = await metric(gw.adminUrl!, 'gatehouse_async_captures_total', { outcome });
    const { response, bytes } = await submit(path);
    expect(response.status).toBe(202);
    expect(bytes.equals(body)).toBe(true);
    expect(response.headers.get('location')).toBeNull();
    expect(response.headers.get('retry-after')).toBeNull();
    expect(await metric(gw.adminUrl!, 'gatehouse_async_captures_total', { outcome })).toBe(counted + 1);
    expect(gw.logs.entries()).toContainEqual(expect.objectContaining({ msg: '202 passed through unrecorded', outcome, route: path.split('/')[1] }));
  });

  it('passes 202s of auth: none routes through unrecorded (nobody could see them), counted as no_subject', async () => {
    const id = randomUUID();
    const body = Buffer.from(JSON.stringify({ requestId: id }));
    up.on('/public/go', (_req, res) => accepted(res, body));
    const counted = await metric(gw.adminUrl!, 'gatehouse_async_captures_total', { outcome: 'no_subject' });
    const { response, bytes } = await submit('/public/go', null);
    expect(response.status).toBe(202);
    expect(bytes.equals(body)).toBe(true);
    expect(response.headers.get('location')).toBeNull();
    expect(await metric(gw.adminUrl!, 'gatehouse_async_captures_total', { outcome: 'no_subject' })).toBe(counted + 1);
    expect(await store.inner.getRequest(id)).toBeNull();
  });

  it('leaves a repeated id with its first owner, counted as duplicate', async () => {
    const id = randomUUID();
    up.on('/orders/same', (_req, res) => accepted(res, { requestId: id }));
    const duplicates = await metric(gw.adminUrl!, 'gatehouse_async_captures_total', { outcome: 'duplicate' });
    expect((await submit('/orders/same', alice)).response.headers.get('location')).not.toBeNull();
    const again = await submit('/orders/same', bob);
    expect(again.response.status).toBe(202);
    expect(again.response.headers.get('location')).toBeNull();
    expect(await metric(gw.adminUrl!, 'gatehouse_async_captures_total', { outcome: 'duplicate' })).toBe(duplicates + 1);
    expect((await poll(gw.url, id, alice.access_token)).status).toBe(200);
    expect((await poll(gw.url, id, bob.access_token)).body).toEqual(NOT_FOUND_BODY);
  });

  it('records nothing on a route with capture: false, and counts nothing', async () => {
    const id = randomUUID();
    up.on('/untracked/go', (_req, res) => accepted(res, { requestId: id }));
    const before = await metric(gw.adminUrl!, 'gatehouse_async_captures_total', { outcome: 'recorded' });
    const { response } = await submit('/untracked/go');
    expect(response.status).toBe(202);
    expect(response.headers.get('location')).toBeNull();
    expect(await store.inner.getRequest(id)).toBeNull();
    expect(await metric(gw.adminUrl!, 'gatehouse_async_captures_total', { outcome: 'recorded' })).toBe(before);
  });

  it('leaves answers other than 202 alone, even when they hold a requestId', async () => {
    const id = randomUUID();
    up.on('/orders/done', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ requestId: id }));
    });
    const { response } = await submit('/orders/done');
    expect(response.status).toBe(200);
    expect(response.headers.get('location')).toBeNull();
    expect(await store.inner.getRequest(id)).toBeNull();
  });

  it('counts what it records', async () => {
    const before = await metric(gw.adminUrl!, 'gatehouse_async_captures_total', { outcome: 'recorded' });
    await submit('/orders/new');
    expect(await metric(gw.adminUrl!, 'gatehouse_async_captures_total', { outcome: 'recorded' })).toBe(before + 1);
  });

  /**
   * The upstream sends the start of a large 202 and holds back the rest until
   * the client has received bytes: a gateway that buffered the whole body
   * would never deliver any, and the exchange would time out.
   */
  async function expectStreamed(path: string, declaredLength: boolean): Promise<void> {
    const head = Buffer.from(`{"requestId":"${randomUUID()}","pad":"${'a'.repeat(64 * 1024)}`);
    const tail = Buffer.from(`${'b'.repeat(2 * 1024 * 1024)}"}`);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    up.on(path, (_req, res) => {
      res.writeHead(202, { 'content-type': 'application/json', ...(declaredLength ? { 'content-length': String(head.length + tail.length) } : {}) });
      res.write(head);
      void released.then(() => res.end(tail));
    });
    const counted = await metric(gw.adminUrl!, 'gatehouse_async_captures_total', { outcome: 'too_large' });
    const received = await new Promise<Buffer>((resolve, reject) => {
      const req = httpRequest(`${gw.url}${path}`, { method: 'POST', headers: as(alice) }, (res) => {
        expect(res.statusCode).toBe(202);
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          release();
        });
        res.on('end', () => resolve(Buffer.concat(chunks)));
        res.on('error', reject);
      });
      req.setTimeout(5_000, () => req.destroy(new Error('the 202 body did not stream')));
      req.on('error', reject);
      req.end();
    });
    expect(received.equals(Buffer.concat([head, tail]))).toBe(true);
    expect(await metric(gw.adminUrl!, 'gatehouse_async_captures_total', { outcome: 'too_large' })).toBe(counted + 1);
  }

  it('streams a huge chunked 202 once it passes the bound, without holding it all', async () => {
    await expectStreamed('/small/huge-chunked', false);
  });

  it('streams a 202 whose declared length is over the bound from the first byte', async () => {
    await expectStreamed('/small/huge-declared', true);
  });

  it('never answers a 202 with a 500, whatever the body', async () => {
    const statuses = gw.logs
      .entries()
      .filter((entry) => entry.kind === 'proxy')
      .map((entry) => entry.status);
    expect(statuses.length).toBeGreaterThan(10);
    expect(statuses).not.toContain(500);
  });
});
