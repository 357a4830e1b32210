// Failover between a route's targets: a target that refuses connections is
// skipped for proxy.targetDownMs, then tried again; requests without a body go
// on to the next target, requests with one are not replayed. The gateway
// reads the wall clock for a target's down time, so the tests set it (only
// Date is faked; sockets and timers run as usual).
import { createServer, type Server } from 'node:http';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { expectDiagnoses, expectNoInternalErrors } from '../helpers/diagnoses.js';
import { startFileGateway } from '../helpers/config-file.js';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { send } from '../helpers/http-client.js';
import { freePort } from '../helpers/ports.js';
import { startUpstream, type EchoBody, type Handler, type Upstream } from '../helpers/upstream.js';

const TARGET_DOWN_MS = 5_000;

/** Echo, naming which upstream answered. */
const named =
  (name: string): Handler =>
  (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ name, method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
  };

let live: Upstream;
let livePost: Upstream;
let deadPort: number;
let deadPostPort: number;
let revived: Server | undefined;
const revivedSeen: string[] = [];
let gw: TestGateway;
let bearer: { authorization: string };

beforeAll(async () => {
  [live, livePost, deadPort, deadPostPort] = await Promise.all([startUpstream(named('live')), startUpstream(named('live-post')), freePort(), freePort()]);
  gw = await startTestGateway({
    config: {
      // Loopback is a trusted proxy here, so the gateway extends X-Forwarded-For:
      // a retried request must extend it once, like any other.
      server: { trustedProxies: ['127.0.0.1'] },
      proxy: { targetDownMs: TARGET_DOWN_MS },
      routes: [
        // The dead target first: round robin starts with it.
        { name: 'pair', prefix: '/pair', upstreams: [`http://127.0.0.1:${deadPort}`, live.url] },
        { name: 'pair-post', prefix: '/pair-post', upstreams: [`http://127.0.0.1:${deadPostPort}`, livePost.url] },
      ],
    },
  });
  const tokens = await login(gw.url, 'alice', 'alice-password-1');
  bearer = { authorization: `Bearer ${tokens.access_token}` };
});

afterAll(async () => {
  expectNoInternalErrors(gw.logs);
  await gw?.close();
  await Promise.all([live?.close(), livePost?.close(), new Promise((resolve) => (revived ? revived.close(resolve) : resolve(undefined)))]);
});

/** Every connection attempt that failed on `port`, with its time (the gateway logs each one). */
function markedDown(port: number): number[] {
  return gw.logs
    .entries()
    .filter((entry) => entry.msg === 'upstream target marked down' && entry.upstream === `http://127.0.0.1:${port}`)
    .map((entry) => entry.time as number);
}

async function get(path: string, headers: Record<string, string> = {}): Promise<EchoBody & { name: string }> {
  const response = await send(`${gw.url}${path}`, { headers: { ...bearer, ...headers } });
  expect(response.status).toBe(200);
  return JSON.parse(response.body.toString()) as EchoBody & { name: string };
}

describe('failover', () => {
  let start: number;
  beforeEach(() => {
    start = Date.now();
    vi.useFakeTimers({ toFake: ['Date'], now: start });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('serves every GET from the live target, skips the dead one for targetDownMs, retries it after, and round-robins again once it is back', async () => {
    // 1. The first request tries the dead target, fails over, and succeeds.
    const first = await get('/pair/1', { 'x-forwarded-for': '203.0.113.9' });
    expect(first.name).toBe('live');
    expect(first.headers['x-forwarded-for']).toBe('203.0.113.9, 127.0.0.1');
    expect(markedDown(deadPort)).toHaveLength(1);

    // 2. While it is down, the dead target is not tried: every request goes straight to the live one, up to the last millisecond.
    const downSince = markedDown(deadPort)[0]!;
    expect(downSince).toBe(start);
    const during: string[] = [];
    for (let i = 0; i < 4; i++) during.push((await get('/pair/2')).name);
    vi.setSystemTime(downSince + TARGET_DOWN_MS - 1);
    during.push((await get('/pair/2')).name);
    expect(new Set(during)).toEqual(new Set(['live']));
    expect(markedDown(deadPort)).toHaveLength(1);

    // 3. Once targetDownMs has passed, it is tried again (and the request still succeeds).
    vi.setSystemTime(downSince + TARGET_DOWN_MS);
    expect((await get('/pair/3')).name).toBe('live');
    const attempts = markedDown(deadPort);
    expect(attempts).toEqual([downSince, downSince + TARGET_DOWN_MS]);

    // 4. It comes back: after its down time, it takes its turn again.
    revived = createServer(named('revived'));
    revived.on('request', (req) => revivedSeen.push(req.url ?? ''));
    await new Promise<void>((resolve) => revived!.listen(deadPort, '127.0.0.1', resolve));
    vi.setSystemTime(attempts[1]! + TARGET_DOWN_MS);
    const names: string[] = [];
    for (let i = 0; i < 6; i++) names.push((await get(`/pair/4-${i}`)).name);
    expect(names.filter((name) => name === 'revived')).toHaveLength(3);
    for (let i = 1; i < names.length; i++) expect(names[i]).not.toBe(names[i - 1]);
    expect(revivedSeen).toHaveLength(3);
    expect(markedDown(deadPort)).toHaveLength(2);
  });

  it('answers 502 to a POST whose target refuses (its body is not replayed) and sends the next POST to the live target', async () => {
    const post = (body: string) => send(`${gw.url}/pair-post/orders`, { method: 'POST', headers: { ...bearer, 'content-type': 'application/json' }, body });
    const refused = await post('{"n":1}');
    expectDiagnoses(refused.status, refused.body, 502, '502 (Bad Gateway) - temporarily_unavailable: upstream connection failed');
    expect(livePost.seen).toHaveLength(0);
    expect(markedDown(deadPostPort)).toHaveLength(1);

    const next = await post('{"n":2}');
    expect(next.status).toBe(200);
    expect(JSON.parse(next.body.toString())).toMatchObject({ name: 'live-post', method: 'POST', body: '{"n":2}' });
    expect(livePost.seen).toHaveLength(1);
    expect(markedDown(deadPostPort)).toHaveLength(1);
  });
});

describe('routes reloaded while a request is in flight', () => {
  it('finishes the request on the routes it was matched against, without crashing', async () => {
    const routes = [{ name: 'pair', prefix: '/pair', upstreams: [`http://127.0.0.1:${deadPostPort}`, live.url] }];
    const file = await startFileGateway(routes);
    try {
      const { access_token: token } = await login(file.url, 'alice', 'alice-password-1');
      // The first check of a token is asynchronous: reload the routes (the same
      // ones, compiled anew) in that gap, as a config edit landing then would.
      const bearerCheck = file.gateway.bearer;
      const authenticate = bearerCheck.authenticate.bind(bearerCheck);
      let reloads = 0;
      bearerCheck.authenticate = (candidate: string) => {
        const checked = authenticate(candidate);
        if (checked instanceof Promise) {
          reloads++;
          void file.gateway.reloadRoutes();
        }
        return checked;
      };
      const response = await send(`${file.url}/pair/in-flight`, { headers: { authorization: `Bearer ${token}` } });
      expect(reloads).toBe(1);
      expect(response.status).toBe(200);
      expect(JSON.parse(response.body.toString())).toMatchObject({ name: 'live', url: '/pair/in-flight' });
    } finally {
      await file.close();
    }
  });
});
