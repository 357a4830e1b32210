// A flow of 202s through a gateway on a Redis topology while a test breaks
// the topology, and the check afterwards that every accepted request is found.
// Beside it, a flow of status reports on the accepted requests (as backends
// send them to the internal API), each with a long poll opened before it: a
// report the API acknowledged must be found afterwards, and heard by its poll.
import { expect, vi } from 'vitest';
import { login, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { SERVICE_TOKEN, poll, reportStatus, type ScriptedUpstream } from './support.js';

/** Reports sent at once, so that several are on their way at the moment of a switch. */
const REPORTERS = 4;
/** A long poll's wait: far longer than any switch, so one that ends pending missed the change. */
const LONG_POLL_WAIT_S = '30';

export interface ReportCheck {
  /** Reports the internal API acknowledged (200 applied or already_applied). */
  acknowledged: number;
  /** Acknowledged reports whose record was not in that state afterwards: [id, reported, found]. */
  lost: Array<[string, string, unknown]>;
  /** Acknowledged reports whose long poll (opened before the report) did not answer that state. */
  unheard: Array<[string, string, unknown]>;
}

export interface FailoverRun {
  gw: TestGateway;
  alice: TokenSetBody;
  /** Every requestId a 202 handed out so far. */
  accepted: string[];
  /** Resolves once `more` further requests were accepted. */
  acceptMore(more: number, timeoutMs: number): Promise<void>;
  /** Stops the flow, waits for the outbox to empty, polls every id: the ones not answered 200. */
  finish(): Promise<{ accepted: number; lost: Array<[string, number]> }>;
  /** Starts the flow of status reports on accepted requests (once). */
  startReports(): void;
  /** Resolves once `more` further reports were acknowledged. */
  acknowledgeMore(more: number, timeoutMs: number): Promise<void>;
  /** After `finish`: stops the reports and checks every acknowledged one. */
  checkReports(): Promise<ReportCheck>;
}

interface Acknowledged {
  id: string;
  status: 'completed' | 'failed';
  /** The long poll opened before the report. */
  heard: Promise<unknown>;
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
  // Reporters that caught up with the 202s wait for the next one (or the end of the flow).
  let wakeReporters = () => {};
  let arrival = new Promise<void>((resolve) => (wakeReporters = resolve));
  const wake = () => {
    const resolve = wakeReporters;
    arrival = new Promise<void>((next) => (wakeReporters = next));
    resolve();
  };
  const traffic = (async () => {
    while (flowing) {
      const id = await submit(gw, alice);
      if (id !== undefined) {
        accepted.push(id);
        wake();
      }
    }
    wake();
  })();
  const acknowledged: Acknowledged[] = [];
  let reporting = false;
  let nextToReport = 0;
  const reporters: Array<Promise<void>> = [];
  const reportOne = async (index: number): Promise<void> => {
    const id = accepted[index]!;
    const status = index % 2 === 0 ? 'completed' : 'failed';
    const heard = poll(gw.url, id, alice.access_token, { wait: LONG_POLL_WAIT_S }).then(
      (answer) => (answer.body as { status?: unknown } | undefined)?.status ?? answer.status,
      (error: unknown) => String(error),
    );
    // The poll's watch is open once its answer has started being computed; a report before that is read, not heard: both fine.
    const answer = await reportStatus(gw.adminUrl!, id, { status });
    const outcome = (answer.body as { outcome?: unknown } | undefined)?.outcome;
    if (answer.status === 200 && (outcome === 'applied' || outcome === 'already_applied')) acknowledged.push({ id, status, heard });
    else void heard;
  };
  const reporter = async (): Promise<void> => {
    while (reporting) {
      if (nextToReport >= accepted.length) {
        if (!flowing) return;
        await arrival;
        continue;
      }
      await reportOne(nextToReport++);
    }
  };
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
    startReports() {
      if (reporting) return;
      reporting = true;
      for (let i = 0; i < REPORTERS; i += 1) reporters.push(reporter());
    },
    async acknowledgeMore(more, timeoutMs) {
      const target = acknowledged.length + more;
      await vi.waitFor(() => expect(acknowledged.length).toBeGreaterThanOrEqual(target), { timeout: timeoutMs });
    },
    async checkReports() {
      reporting = false;
      wake();
      await Promise.all(reporters);
      // Reports kept but not yet confirmed are written too before anything is read.
      await vi.waitFor(() => expect(gw.gateway.requests.queued).toBe(0), { timeout: 30_000 });
      const lost: ReportCheck['lost'] = [];
      const unheard: ReportCheck['unheard'] = [];
      for (const { id, status, heard } of acknowledged) {
        const found = (await poll(gw.url, id, alice.access_token)).body as { status?: unknown } | undefined;
        if (found?.status !== status) lost.push([id, status, found?.status]);
        // A long poll the switch interrupted answers 503 with Retry-After (the store was away), and its client asks
        // again; what must never happen is a poll answering anything but the reported status once it was applied.
        let polled = await heard;
        if (polled === 503) polled = ((await poll(gw.url, id, alice.access_token)).body as { status?: unknown } | undefined)?.status;
        if (polled !== status) unheard.push([id, status, polled]);
      }
      return { acknowledged: acknowledged.length, lost, unheard };
    },
  };
}
