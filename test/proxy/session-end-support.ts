// What the session-end tests hold open through a gateway: an event stream
// (GET, chunked, never ends by itself) and an upload (POST, a chunked body
// the client keeps sending, never answered by itself), each seen from both
// ends: the client's, and the upstream's, which tells when its side closed.
// Also a long poll of the status endpoint, waiting on a request a 202 started.
import { once } from 'node:events';
import { request, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { expect, vi } from 'vitest';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';
import { EVENTUALLY, poll, type StatusAnswer } from '../async-requests/support.js';

/** One request as the upstream saw it: it arrived (its first body chunk, for an upload), then closed. */
interface Probe {
  arrived: Promise<void>;
  closed: Promise<void>;
}

export interface HoldingUpstream extends Upstream {
  /** The probe of the request whose query names `probe=<id>`. */
  probe(id: string): Probe;
}

/** GET: an event every 20 ms until the gateway closes its side. POST: reads the body, answers nothing. */
export async function startHoldingUpstream(): Promise<HoldingUpstream> {
  const probes = new Map<string, Probe & { arrive(): void; close(): void }>();
  const probeOf = (id: string) => {
    let entry = probes.get(id);
    if (entry === undefined) {
      let arrive!: () => void;
      let close!: () => void;
      const arrived = new Promise<void>((resolve) => (arrive = resolve));
      const closed = new Promise<void>((resolve) => (close = resolve));
      entry = { arrived, closed, arrive, close };
      probes.set(id, entry);
    }
    return entry;
  };
  const upstream = await startUpstream((req: IncomingMessage, res: ServerResponse) => {
    const id = new URL(req.url ?? '/', 'http://upstream').searchParams.get('probe') ?? '';
    const probe = probeOf(id);
    res.once('close', () => probe.close());
    if (req.method === 'POST') {
      req.once('data', () => probe.arrive());
      req.resume();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    let n = 0;
    const tick = setInterval(() => res.write(`data: ${n++}\n\n`), 20);
    res.once('close', () => clearInterval(tick));
    res.write(': open\n\n');
    probe.arrive();
  });
  return Object.assign(upstream, { probe: (id: string): Probe => probeOf(id) });
}

export interface OpenStream {
  /** Resolves when the response ends; `complete`: it ended cleanly (its last chunk came), not cut. */
  ended: Promise<{ complete: boolean }>;
  /** The upstream's side closed. */
  upstreamClosed: Promise<void>;
}

/** Opens an event stream through the gateway and resolves once events flow from end to end. */
export async function openStream(url: string, token: string, upstream: HoldingUpstream, id = crypto.randomUUID()): Promise<OpenStream> {
  const req = request(`${url}?probe=${id}`, { headers: { authorization: `Bearer ${token}` }, agent: false });
  req.end();
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  if (res.statusCode !== 200) throw new Error(`stream refused: ${res.statusCode}`);
  const ended = new Promise<{ complete: boolean }>((resolve) => {
    res.on('data', () => {});
    res.once('end', () => resolve({ complete: res.complete }));
    res.once('close', () => resolve({ complete: res.complete }));
  });
  await once(res, 'data');
  await upstream.probe(id).arrived;
  return { ended, upstreamClosed: upstream.probe(id).closed };
}

export interface OpenUpload {
  /** The answer the client got (status and body), while its body was still being sent. */
  answered: Promise<{ status: number; body: string }>;
  upstreamClosed: Promise<void>;
  client: ClientRequest;
}

/** Starts an upload through the gateway that never finishes by itself; resolves once the upstream reads it. */
export async function openUpload(url: string, token: string, upstream: HoldingUpstream, id = crypto.randomUUID()): Promise<OpenUpload> {
  const client = request(`${url}?probe=${id}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' },
    agent: false,
  });
  client.on('error', () => {}); // the gateway closes the connection under a body still being sent
  const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
    client.once('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.once('error', reject);
    });
  });
  const tick = setInterval(() => client.write(Buffer.alloc(1024, 0x61)), 20);
  client.once('close', () => clearInterval(tick));
  answered.finally(() => clearInterval(tick)).catch(() => {});
  client.write(Buffer.alloc(1024, 0x61));
  await upstream.probe(id).arrived;
  return { answered, upstreamClosed: upstream.probe(id).closed, client };
}

/** The stream ended cleanly and its upstream side closed. */
export async function expectStreamEnded(stream: OpenStream): Promise<void> {
  const { complete } = await stream.ended;
  if (!complete) throw new Error('the stream was cut, not ended');
  await stream.upstreamClosed;
}

/** The upload was answered 401 with its $diagnoses, and its upstream side closed. */
export async function expectUploadRefused(upload: OpenUpload): Promise<void> {
  const { status, body } = await upload.answered;
  if (status !== 401) throw new Error(`upload answered ${status}: ${body}`);
  expectDiagnoses(status, body, 401, /session ended|no longer active|access revoked/);
  await upload.upstreamClosed;
  upload.client.destroy();
}

/**
 * The gateways' `requests.maxWaitS` in these tests: far longer than a test
 * may take, so a long poll that only waited its wait out fails by the timeout.
 */
export const LONG_WAIT_S = 300;

export interface OpenLongPoll {
  /** The answer the poll gets. */
  answered: Promise<StatusAnswer>;
}

/**
 * Starts an asynchronous request through `acceptUrl` (a route whose upstream
 * answers 202 with a requestId) and long-polls its status on `on` with the
 * refresh token; resolves once the poll waits there.
 */
export async function openLongPoll(acceptUrl: string, on: TestGateway, tokens: { access_token: string; refresh_token: string }): Promise<OpenLongPoll> {
  const accepted = await fetch(acceptUrl, { method: 'POST', headers: { authorization: `Bearer ${tokens.access_token}` } });
  expect(accepted.status).toBe(202);
  const { requestId } = (await accepted.json()) as { requestId: string };
  const answered = poll(on.url, requestId, tokens.refresh_token, { wait: String(LONG_WAIT_S) });
  await vi.waitFor(() => expect(on.gateway.requests.watching).toBe(1), EVENTUALLY);
  return { answered };
}

/** The long poll was answered 401 with its $diagnoses and a Bearer challenge, and waits no more. */
export async function expectLongPollRefused(longPoll: OpenLongPoll, on: TestGateway): Promise<void> {
  const answer = await longPoll.answered;
  expectDiagnoses(answer.status, JSON.stringify(answer.body), 401, /session ended/);
  expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer /);
  expect(on.gateway.requests.watching).toBe(0);
}
