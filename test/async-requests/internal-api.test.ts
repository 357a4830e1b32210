// The internal API through which backends report outcomes, on both stores:
// PUT /internal/v1/requests/<id>/status on the admin listener, with the
// service credential. Each answer says what the call did, so retrying is safe.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';

import {
  SERVICE_TOKEN,
  STORE_KINDS,
  TestStore,
  metric,
  poll,
  reportStatus,
  startScriptedUpstream,
  type ScriptedUpstream,
  startRequestsFixture,
  type RequestsFixture,
} from './support.js';

const diagnoses = (detail: string) => ({ $diagnoses: [{ $severity: 'error', $message: expect.any(String), $detail: detail }] });

describe.each(STORE_KINDS)('the internal status API on the %s store', (kind) => {
  let fixture: RequestsFixture;
  let store: TestStore;
  let gw: TestGateway;
  let alice: TokenSetBody;

  beforeAll(async () => {
    fixture = await startRequestsFixture(kind, (upstream) => ({
      requests: { serviceToken: SERVICE_TOKEN },
      routes: [{ name: 'orders', prefix: '/orders', upstreams: [upstream.url] }],
    }));
    ({ store, gw, alice } = fixture);
  });
  afterAll(() => fixture?.close());

  async function accept(): Promise<string> {
    const response = await fetch(`${gw.url}/orders/new`, { method: 'POST', headers: { authorization: `Bearer ${alice.access_token}` } });
    expect(response.status).toBe(202);
    return ((await response.json()) as { requestId: string }).requestId;
  }

  const statusOf = async (id: string) => (await poll(gw.url, id, alice.access_token)).body;

  it('applies pending → completed, and the client sees it', async () => {
    const id = await accept();
    const before = await metric(gw.adminUrl!, 'gatehouse_request_transitions_total', { source: 'internal_api', outcome: 'applied' });
    const answer = await reportStatus(gw.adminUrl!, id, { status: 'completed' });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ id, status: 'completed', outcome: 'applied' });
    expect(await statusOf(id)).toEqual({ status: 'completed' });
    expect(await metric(gw.adminUrl!, 'gatehouse_request_transitions_total', { source: 'internal_api', outcome: 'applied' })).toBe(before + 1);
    const record = await store.inner.getRequest(id);
    expect(record!.updatedAt).toBeGreaterThanOrEqual(record!.createdAt);
  });

  it('applies pending → failed', async () => {
    const id = await accept();
    expect((await reportStatus(gw.adminUrl!, id, { status: 'failed' })).body).toEqual({ id, status: 'failed', outcome: 'applied' });
    expect(await statusOf(id)).toEqual({ status: 'failed' });
  });

  it('answers a repeat as already_applied (idempotent), changing nothing', async () => {
    const id = await accept();
    await reportStatus(gw.adminUrl!, id, { status: 'completed' });
    const updatedAt = (await store.inner.getRequest(id))!.updatedAt;
    const again = await reportStatus(gw.adminUrl!, id, { status: 'completed' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ id, status: 'completed', outcome: 'already_applied' });
    expect((await store.inner.getRequest(id))!.updatedAt).toBe(updatedAt);
  });

  it('refuses the other terminal state with 409: a terminal state never changes', async () => {
    const id = await accept();
    await reportStatus(gw.adminUrl!, id, { status: 'completed' });
    const conflict = await reportStatus(gw.adminUrl!, id, { status: 'failed' });
    expect(conflict.status).toBe(409);
    expect(conflict.body).toEqual(diagnoses('409 (Conflict) - invalid_request: the request has completed already'));
    expect(await statusOf(id)).toEqual({ status: 'completed' });
  });

  it.each([
    ['an unknown id', () => randomUUID()],
    ['a malformed id', () => 'not-a-uuid'],
  ])('answers %s with 404', async (_case, id) => {
    const answer = await reportStatus(gw.adminUrl!, id(), { status: 'completed' });
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual(diagnoses('404 (Not Found) - not_found: unknown request id'));
  });

  it('takes the id in upper case too', async () => {
    const id = await accept();
    expect((await reportStatus(gw.adminUrl!, id.toUpperCase(), { status: 'completed' })).body).toEqual({ id, status: 'completed', outcome: 'applied' });
  });

  it.each([
    ['a status that is not terminal', { status: 'pending' }, undefined],
    ['an unknown status', { status: 'done' }, undefined],
    ['a status of the wrong type', { status: ['completed'] }, undefined],
    ['no status', { state: 'completed' }, undefined],
    ['an array', ['completed'], undefined],
    ['null', 'null', undefined],
    ['malformed JSON', '{"status": "completed"', undefined],
    ['an empty body', '', undefined],
    ['a body that is not JSON', 'status=completed', 'application/x-www-form-urlencoded'],
  ])('refuses %s with 400, changing nothing', async (_case, body, contentType) => {
    const id = await accept();
    const answer = await reportStatus(gw.adminUrl!, id, body, contentType === undefined ? {} : { contentType });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual(diagnoses(expect.stringMatching(/^400 \(Bad Request\) - invalid_request: /) as unknown as string));
    expect(await statusOf(id)).toEqual({ status: 'pending' });
  });

  it.each([
    ['no credential', null],
    ['a wrong credential of the same length', SERVICE_TOKEN.replace(/.$/, 'X')],
    ['a prefix of the credential', SERVICE_TOKEN.slice(0, 32)],
    ['a longer credential', `${SERVICE_TOKEN}x`],
    ["a user's access token", 'user'],
  ])('refuses %s with 401, changing nothing', async (_case, token) => {
    const id = await accept();
    const answer = await reportStatus(gw.adminUrl!, id, { status: 'completed' }, { token: token === 'user' ? alice.access_token : token });
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="gatehouse-internal"');
    expect(answer.body).toEqual(diagnoses('401 (Unauthorized) - invalid_client: invalid service credential'));
    expect(await statusOf(id)).toEqual({ status: 'pending' });
  });

  it('refuses a credential sent any other way than as a bearer token', async () => {
    const id = await accept();
    const response = await fetch(`${gw.adminUrl}/internal/v1/requests/${id}/status`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`svc:${SERVICE_TOKEN}`).toString('base64')}` },
      body: JSON.stringify({ status: 'completed' }),
    });
    expect(response.status).toBe(401);
  });

  it('is not served on the public listener', async () => {
    const id = await accept();
    const response = await fetch(`${gw.url}/internal/v1/requests/${id}/status`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${SERVICE_TOKEN}` },
      body: JSON.stringify({ status: 'completed' }),
    });
    expect(response.status).toBe(404);
    expect(await statusOf(id)).toEqual({ status: 'pending' });
  });
});

describe('the internal status API without a configured service token', () => {
  let up: ScriptedUpstream;
  let gw: TestGateway;
  let alice: TokenSetBody;

  beforeAll(async () => {
    up = await startScriptedUpstream();
    gw = await startTestGateway({ config: { routes: [{ name: 'orders', prefix: '/orders', upstreams: [up.url] }] } });
    alice = await login(gw.url, 'alice', 'alice-password-1');
  });

  afterAll(async () => {
    await gw?.close();
    await up?.close();
  });

  it('warns at start and refuses every call with 401', async () => {
    expect(gw.logs.entries()).toContainEqual(
      expect.objectContaining({ level: 40, msg: expect.stringMatching(/no requests\.serviceToken .* refuses every call/) }),
    );
    const response = await fetch(`${gw.url}/orders/new`, { method: 'POST', headers: { authorization: `Bearer ${alice.access_token}` } });
    const { requestId } = (await response.json()) as { requestId: string };
    for (const token of [SERVICE_TOKEN, null, '', 'x'.repeat(40)]) {
      const answer = await reportStatus(gw.adminUrl!, requestId, { status: 'completed' }, { token });
      expect(answer.status).toBe(401);
    }
    expect((await poll(gw.url, requestId, alice.access_token)).body).toEqual({ status: 'pending' });
  });
});
