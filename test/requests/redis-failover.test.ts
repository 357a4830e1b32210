// A Sentinel failover under a flow of 202s: every accepted request is found
// afterwards, none with a wrong answer. Writes that fail on the way (the old
// master refusing with READONLY, connections cut) go to the outbox and are
// retried; none is dropped.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { login, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { startSentinelSet, type SentinelSet } from '../helpers/redis-topology.js';
import { SERVICE_TOKEN, poll, startScriptedUpstream, type ScriptedUpstream } from './support.js';

let set: SentinelSet;
let up: ScriptedUpstream;

beforeAll(async () => {
  up = await startScriptedUpstream();
  set = await startSentinelSet();
}, 60_000);

afterAll(async () => {
  await up?.close();
  await set?.close();
});

async function submit(gw: TestGateway, tokens: TokenSetBody): Promise<string | undefined> {
  const response = await fetch(`${gw.url}/orders/new`, { method: 'POST', headers: { authorization: `Bearer ${tokens.access_token}` } });
  const body = await response.text();
  return response.status === 202 ? (JSON.parse(body) as { requestId: string }).requestId : undefined;
}

describe('a gateway on a Sentinel set', () => {
  it('loses no accepted request through SENTINEL FAILOVER', { timeout: 60_000 }, async () => {
    await set.waitForAgreement();
    const url = `redis-sentinel://${set.sentinels.map(({ host, port }) => `${host}:${port}`).join(',')}/${set.masterName}`;
    const gw = await startTestGateway({ config: { store: { url }, requests: { serviceToken: SERVICE_TOKEN }, routes: [{ name: 'orders', prefix: '/orders', upstreams: [up.url] }] } });
    try {
      const alice = await login(gw.url, 'alice', 'alice-password-1');
      const accepted: string[] = [];
      let flowing = true;
      const traffic = (async () => {
        while (flowing) {
          const id = await submit(gw, alice);
          if (id !== undefined) accepted.push(id);
        }
      })();
      await vi.waitFor(() => expect(accepted.length).toBeGreaterThan(20), { timeout: 10_000 });
      const before = accepted.length;
      await set.failover();
      await vi.waitFor(() => expect(accepted.length).toBeGreaterThan(before + 50), { timeout: 20_000 });
      flowing = false;
      await traffic;

      await vi.waitFor(() => expect(gw.gateway.requests.queued).toBe(0), { timeout: 20_000 });
      const answers = new Map<string, number>();
      for (const id of accepted) {
        const answer = await poll(gw.url, id, alice.access_token);
        answers.set(id, answer.status);
      }
      const lost = [...answers].filter(([, status]) => status !== 200);
      expect({ accepted: accepted.length, lost }).toEqual({ accepted: accepted.length, lost: [] });
    } finally {
      await gw.close();
    }
  });
});
