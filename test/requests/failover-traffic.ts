// A flow of 202s through a gateway on a Redis topology while a test breaks
// the topology, and the check afterwards that every accepted request is found.
import { expect, vi } from 'vitest';
import { login, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { SERVICE_TOKEN, poll, type ScriptedUpstream } from './support.js';

export interface FailoverRun {
  gw: TestGateway;
  alice: TokenSetBody;
  /** Every requestId a 202 handed out so far. */
  accepted: string[];
  /** Resolves once `more` further requests were accepted. */
  acceptMore(more: number, timeoutMs: number): Promise<void>;
  /** Stops the flow, waits for the outbox to empty, polls every id: the ones not answered 200. */
  finish(): Promise<{ accepted: number; lost: Array<[string, number]> }>;
}

async function submit(gw: TestGateway, tokens: TokenSetBody): Promise<string | undefined> {
  const response = await fetch(`${gw.url}/orders/new`, { method: 'POST', headers: { authorization: `Bearer ${tokens.access_token}` } });
  const body = await response.text();
  return response.status === 202 ? (JSON.parse(body) as { requestId: string }).requestId : undefined;
}

/** Starts a gateway on `storeUrl` and a flow of 202s through it, one request at a time. */
export async function startFailoverRun(storeUrl: string, upstream: ScriptedUpstream): Promise<FailoverRun> {
  const gw = await startTestGateway({
    config: { store: { url: storeUrl }, requests: { serviceToken: SERVICE_TOKEN }, routes: [{ name: 'orders', prefix: '/orders', upstreams: [upstream.url] }] },
  });
  const alice = await login(gw.url, 'alice', 'alice-password-1');
  const accepted: string[] = [];
  let flowing = true;
  const traffic = (async () => {
    while (flowing) {
      const id = await submit(gw, alice);
      if (id !== undefined) accepted.push(id);
    }
  })();
  return {
    gw,
    alice,
    accepted,
    async acceptMore(more, timeoutMs) {
      const target = accepted.length + more;
      await vi.waitFor(() => expect(accepted.length).toBeGreaterThanOrEqual(target), { timeout: timeoutMs });
    },
    async finish() {
      flowing = false;
      await traffic;
      // Nothing stays queued: whatever failed on the way was written again.
      await vi.waitFor(() => expect(gw.gateway.requests.queued).toBe(0), { timeout: 30_000 });
      const lost: Array<[string, number]> = [];
      for (const id of accepted) {
        const answer = await poll(gw.url, id, alice.access_token);
        if (answer.status !== 200) lost.push([id, answer.status]);
      }
      return { accepted: accepted.length, lost };
    },
  };
}
