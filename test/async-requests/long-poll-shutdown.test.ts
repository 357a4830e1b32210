// A stopping gateway answers its open long polls at once, with the status as
// it stands, instead of holding them (and its own exit) for up to
// requests.maxWaitS: the client can ask again elsewhere.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { EVENTUALLY, poll, SERVICE_TOKEN, startScriptedUpstream, type ScriptedUpstream } from './support.js';

/** Far beyond the test's timeout: a poll that waited it out fails the test. */
const MAX_WAIT_S = 300;
let up: ScriptedUpstream;
let gw: TestGateway;

beforeAll(async () => {
  up = await startScriptedUpstream();
  gw = await startTestGateway({
    config: {
      server: { shutdownGraceS: MAX_WAIT_S },
      requests: { serviceToken: SERVICE_TOKEN, maxWaitS: MAX_WAIT_S },
      routes: [{ name: 'orders', prefix: '/orders', upstreams: [up.url] }],
    },
  });
}, 60_000);

afterAll(async () => {
  await up?.close();
});

describe('a long poll when the gateway stops', () => {
  it('answers at once with the current status', { timeout: 20_000 }, async () => {
    const alice = await login(gw.url, 'alice', 'alice-password-1');
    const accepted = await fetch(`${gw.url}/orders/new`, { method: 'POST', headers: { authorization: `Bearer ${alice.access_token}` } });
    expect(accepted.status).toBe(202);
    const { requestId } = (await accepted.json()) as { requestId: string };
    const waiting = poll(gw.url, requestId, alice.access_token, { wait: String(MAX_WAIT_S) });
    await vi.waitFor(() => expect(gw.gateway.requests.watching).toBe(1), EVENTUALLY);
    const closed = gw.close();
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ status: 'pending' });
    expect(answer.headers.get('connection')).toBe('close');
    await closed;
  });
});
