// Upstream failures end to end: a real gateway in front of real upstreams on
// loopback that refuse, do not resolve, never answer, never accept, or die
// half way through a response; and clients that give up. Every error is the
// `$diagnoses` body with the status the failure calls for, never a 500, never
// a stack trace, and the gateway keeps serving.
import dns from 'node:dns';
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectDiagnoses, expectNoInternalErrors, proxiedStatuses, STACK_TRACE } from '../helpers/diagnoses.js';
import { fullBacklog, type FullBacklog } from '../helpers/full-backlog.js';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawConnection, parseHead, send } from '../helpers/http-client.js';
import { freePort } from '../helpers/ports.js';
import { Arrivals, echo, startUpstream, type Upstream } from '../helpers/upstream.js';

/** The requests the holding upstream received; it reads each one and never answers. */
const held = new Arrivals();

/** Sends the head and part of the body, then the upstream process "dies": its socket is destroyed (at once for `…/before-head`). */
function dieMidResponse(req: IncomingMessage, res: ServerResponse): void {
  if (req.url?.endsWith('/before-head')) {
    req.socket.destroy();
    return;
  }
  res.writeHead(200, req.url?.endsWith('/chunked') ? { 'content-type': 'application/octet-stream' } : { 'content-length': String(1 << 20) });
  // Once the part is on its way, the connection goes.
  res.write(Buffer.alloc(64 * 1024, 'a'), () => req.socket.destroy());
}

const RESOLVER_NAMES: string[] = [];
const realLookup = dns.lookup;

let ok: Upstream;
let holding: Upstream;
let dying: Upstream;
let blackhole: FullBacklog;
let refusedPort: number;
let gw: TestGateway;
let bearer: { authorization: string };

beforeAll(async () => {
  // RFC 6761: `.invalid` never resolves. Answer those lookups here, the way a
  // resolver that knows the rule does, so that no DNS query leaves the machine;
  // the gateway still goes through the real agent, socket and lookup path.
  (dns as { lookup: unknown }).lookup = function lookup(hostname: string, ...rest: unknown[]) {
    if (!hostname.endsWith('.invalid')) return (realLookup as (...args: unknown[]) => void).call(dns, hostname, ...rest);
    RESOLVER_NAMES.push(hostname);
    const callback = rest[rest.length - 1] as (error: NodeJS.ErrnoException) => void;
    const error: NodeJS.ErrnoException = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
      code: 'ENOTFOUND',
      errno: -3008,
      syscall: 'getaddrinfo',
    });
    process.nextTick(callback, error);
  };
  [ok, holding, dying, blackhole, refusedPort] = await Promise.all([
    startUpstream(echo),
    startUpstream(held.hold),
    startUpstream(dieMidResponse),
    fullBacklog(),
    freePort(),
  ]);
  gw = await startTestGateway({
    config: {
      routes: [
        { name: 'ok', prefix: '/ok', upstreams: [ok.url], auth: 'none' },
        { name: 'refused', prefix: '/refused', upstreams: [`http://127.0.0.1:${refusedPort}`] },
        { name: 'unresolvable', prefix: '/unresolvable', upstreams: ['http://nonexistent.invalid:8080'], auth: 'none' },
        { name: 'slow', prefix: '/slow', upstreams: [holding.url], auth: 'none', responseTimeoutMs: 300 },
        { name: 'blackhole', prefix: '/blackhole', upstreams: [blackhole.url], auth: 'none', connectTimeoutMs: 300, responseTimeoutMs: 10_000 },
        { name: 'hold', prefix: '/hold', upstreams: [holding.url], auth: 'none' },
        { name: 'hold-limited', prefix: '/hold-limited', upstreams: [holding.url], auth: 'none', bodyLimitBytes: 1 << 20 },
        { name: 'dying', prefix: '/dying', upstreams: [dying.url], auth: 'none' },
      ],
    },
  });
  const tokens = await login(gw.url, 'alice', 'alice-password-1');
  bearer = { authorization: `Bearer ${tokens.access_token}` };
});

afterAll(async () => {
  (dns as { lookup: unknown }).lookup = realLookup;
  await gw?.close();
  await Promise.all([ok?.close(), holding?.close(), dying?.close(), blackhole?.close()]);
});

/** The error the gateway logged for its request to `upstream` (what it logged as the cause of a 5xx). */
const loggedFailure = (upstream: string) =>
  gw.logs.next((entry) => entry.msg === 'proxied request failed' && entry.upstream === upstream).then((entry) => entry.err as { message?: string });

describe('upstream failures', () => {
  it('answers 502 with the $diagnoses body when the upstream refuses connections', async () => {
    const response = await send(`${gw.url}/refused/orders`, { headers: bearer });
    expectDiagnoses(response.status, response.body, 502, '502 (Bad Gateway) - temporarily_unavailable: upstream connection failed');
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('answers 503 when the upstream host name does not resolve', async () => {
    const response = await send(`${gw.url}/unresolvable/x`);
    expectDiagnoses(response.status, response.body, 503, '503 (Service Unavailable) - temporarily_unavailable: upstream host name did not resolve');
    expect(RESOLVER_NAMES).toContain('nonexistent.invalid');
  });

  // Timeouts are tested by their outcome, not the clock: a deadline that did
  // not hold would leave the request hanging past the test's timeout, and the
  // logged cause says which deadline passed.
  it('answers 504 once the response timeout passes when the upstream accepts but never answers, and closes the upstream request', async () => {
    const response = await send(`${gw.url}/slow/never`);
    expectDiagnoses(response.status, response.body, 504, '504 (Gateway Timeout) - temporarily_unavailable: upstream timed out');
    // The request reached the upstream (the answer was not made up before it), and was not left open there.
    await (
      await held.of('/slow/never')
    ).gone;
    expect((await loggedFailure(holding.url)).message).toMatch(/headers timeout/i);
  });

  it('answers 504 once the response timeout passes for a request that says Expect: 100-continue', async () => {
    // The gateway answers 100 Continue itself; the deadline must hold all the same.
    const conn = await rawConnection(gw.url);
    conn.socket.write('POST /slow/expect HTTP/1.1\r\nhost: gw\r\ncontent-length: 5\r\nexpect: 100-continue\r\n\r\n');
    await conn.waitFor('HTTP/1.1 100 Continue\r\n\r\n');
    conn.socket.write('hello');
    const data = await conn.waitFor('"}]}');
    conn.socket.destroy();
    const head = parseHead(data.subarray(data.indexOf('HTTP/1.1 5')));
    expectDiagnoses(head.status, head.rest, 504, '504 (Gateway Timeout) - temporarily_unavailable: upstream timed out');
    const upstreamSaw = await held.of('/slow/expect');
    await upstreamSaw.gone;
    expect(upstreamSaw.ended).toBe(true);
  });

  it('answers 504 once the connect timeout passes when the upstream never accepts the connection', async () => {
    const response = await send(`${gw.url}/blackhole/x`);
    expectDiagnoses(response.status, response.body, 504, '504 (Gateway Timeout) - temporarily_unavailable: upstream timed out');
    // It was the connect deadline that passed (the response deadline is 10 s).
    expect((await loggedFailure(blackhole.url)).message).toMatch(/connect timeout/i);
  });
});

// "At once": the upstream's request is closed while the gateway's deadlines
// for it (30 s, the default) are still far off, so only the client's leaving
// can have closed it; a gateway that held on would fail on the test timeout.
describe('clients that go away', () => {
  it('frees the upstream request at once when the client aborts while the upstream is slow to answer', async () => {
    const client = httpRequest(`${gw.url}/hold/slow-answer`, { agent: false });
    client.on('error', () => {});
    client.end();
    const upstreamSaw = await held.of('/hold/slow-answer');
    client.destroy();
    await upstreamSaw.gone;
  });

  it.each([['/hold'], ['/hold-limited']])('frees the upstream request at once when the client aborts a slow streaming request body (%s)', async (prefix) => {
    const url = `${prefix}/slow-upload`;
    const client = httpRequest(`${gw.url}${url}`, { method: 'POST', agent: false, headers: { 'content-type': 'application/octet-stream' } });
    client.on('error', () => {});
    client.write(Buffer.alloc(100, 'x'));
    const upstreamSaw = await held.of(url);
    await upstreamSaw.firstBytes;
    client.destroy();
    await upstreamSaw.gone;
    expect(upstreamSaw.ended).toBe(false);
  });
});

describe('an upstream that dies mid-response', () => {
  it.each([
    ['content-length', '/dying/length'],
    ['chunked', '/dying/chunked'],
  ])('cuts the client connection (%s framing), does not crash and keeps serving', async (_framing, path) => {
    // A connection left hanging fails on the test timeout.
    const outcome = await new Promise<{ status: number; bytes: number; complete: boolean }>((resolve, reject) => {
      const client = httpRequest(`${gw.url}${path}`, { agent: false }, (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => (bytes += chunk.length));
        res.on('error', () => {});
        res.on('close', () => resolve({ status: res.statusCode ?? 0, bytes, complete: res.complete }));
      });
      client.on('error', reject);
      client.end();
    });
    expect(outcome.status).toBe(200);
    expect(outcome.complete).toBe(false);
    expect(outcome.bytes).toBeLessThan(1 << 20);
    const after = await send(`${gw.url}/ok/still-there`);
    expect(after.status).toBe(200);
    expect(JSON.parse(after.body.toString())).toMatchObject({ url: '/ok/still-there' });
  });
});

describe('error responses', () => {
  it('never contain a stack trace, and nothing answers 500', async () => {
    const cases: Array<[string, number, Record<string, string>?]> = [
      ['/refused/a', 502, bearer],
      ['/unresolvable/a', 503],
      ['/slow/a', 504],
      ['/blackhole/a', 504],
      // Dies before sending anything: the request may have been acted on, so it is not retried.
      ['/dying/before-head', 502],
      ['/nowhere', 404],
    ];
    const responses = await Promise.all(cases.map(([path, , headers]) => send(`${gw.url}${path}`, { headers: headers ?? {} })));
    responses.forEach((response, i) => {
      expect(response.status).toBe(cases[i]![1]);
      expect(response.body.toString()).not.toMatch(STACK_TRACE);
      expect(Object.keys(JSON.parse(response.body.toString()) as object)).toEqual(['$diagnoses']);
    });
    // Everything this file did, the aborted and cut-off exchanges included.
    expect(proxiedStatuses(gw.logs).length).toBeGreaterThanOrEqual(cases.length);
    expectNoInternalErrors(gw.logs);
  });
});
