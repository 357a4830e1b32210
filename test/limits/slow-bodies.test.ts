// Attack 1 of the abuse issue: connections trickling a request body to a
// public route took every connection of the upstream that authenticated
// routes use too. A public route may hold only its share of the upstream's
// connections (503 with Retry-After past it), and a body that keeps too slow
// a rate, or has not arrived by its deadline, is answered 408 and its
// upstream request aborted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { parseHead, rawConnection, send, type RawExchange } from '../helpers/http-client.js';
import { Arrivals, echo, startUpstream, type Upstream } from '../helpers/upstream.js';

/** The upstream's connections, shared by every route on it. */
const POOL = 6;
/** The public route's share of them. */
const PUBLIC_SHARE = 2;
const TRICKLERS = 8;

const held = new Arrivals();
let upstream: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  // Requests to the trickling routes are held by the upstream (it reads, never answers); the rest are echoed.
  upstream = await startUpstream((req, res) => (req.url?.startsWith('/private') ? echo(req, res) : held.hold(req, res)));
  const route = { upstreams: [upstream.url], auth: 'none' };
  gw = await startTestGateway({
    config: {
      proxy: { maxSocketsPerTarget: POOL, publicRouteMaxUpstreamConnections: PUBLIC_SHARE },
      routes: [
        // No minimum rate, a long deadline: only the share holds these back.
        { ...route, name: 'public', prefix: '/public', minBodyBytesPerS: 0 },
        { ...route, name: 'slow', prefix: '/slow', minBodyBytesPerS: 1000, bodyRateWindowMs: 100, maxUpstreamConnections: 10 },
        { ...route, name: 'deadline', prefix: '/deadline', minBodyBytesPerS: 0, requestDeadlineMs: 200, maxUpstreamConnections: 10 },
        { name: 'private', prefix: '/private', upstreams: [upstream.url] },
      ],
    },
  });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

/** A request whose body announces 1000 bytes and brings one. */
async function trickle(path: string): Promise<RawExchange> {
  const connection = await rawConnection(gw.url);
  connection.socket.write(`POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/octet-stream\r\ncontent-length: 1000\r\n\r\na`);
  return connection;
}

describe('attack 1: trickling bodies to a public route', () => {
  it('lets a public route hold only its share of a shared upstream: authenticated requests still succeed', async () => {
    const tricklers: RawExchange[] = [];
    try {
      for (let i = 0; i < TRICKLERS; i++) tricklers.push(await trickle(`/public/upload/${i}`));
      // The share reaches the upstream and stays there; every other trickler is refused at once.
      const refused = await Promise.all(tricklers.slice(PUBLIC_SHARE).map((t) => t.closed));
      for (const answer of refused) {
        const head = parseHead(answer);
        expectDiagnoses(head.status, head.rest, 503, '503 (Service Unavailable) - temporarily_unavailable: too many requests in flight on this route');
        expect(head.headers.get('retry-after')).toEqual(['1']);
      }
      await Promise.all(Array.from({ length: PUBLIC_SHARE }, (_, i) => held.of(`/public/upload/${i}`).then((arrival) => arrival.firstBytes)));

      // More authenticated requests at once than the pool has left after the public share: all answered.
      const { access_token } = await login(gw.url, 'alice', 'alice-password-1');
      const answers = await Promise.all(
        Array.from({ length: POOL }, (_, i) => send(`${gw.url}/private/${i}`, { headers: { authorization: `Bearer ${access_token}` } })),
      );
      expect(answers.map((a) => a.status)).toEqual(Array.from({ length: POOL }, () => 200));
    } finally {
      for (const t of tricklers) t.socket.destroy();
    }
  });

  it('answers 408 to a body below the minimum rate and aborts its upstream request', async () => {
    const connection = await trickle('/slow/upload');
    const arrival = await held.of('/slow/upload');
    const answer = parseHead(await connection.closed);
    expectDiagnoses(answer.status, answer.rest, 408, '408 (Request Timeout) - invalid_request: the request body arrives too slowly');
    await arrival.gone;
    expect(arrival.ended).toBe(false);
  });

  it('answers 408 to a body that has not arrived by the route deadline and aborts its upstream request', async () => {
    const connection = await trickle('/deadline/upload');
    const arrival = await held.of('/deadline/upload');
    const answer = parseHead(await connection.closed);
    expectDiagnoses(answer.status, answer.rest, 408, '408 (Request Timeout) - invalid_request: the request body did not arrive in time');
    await arrival.gone;
    expect(arrival.ended).toBe(false);
  });

  it('answers 408 to a login body that has not arrived by server.requestTimeoutMs, and to a head past server.headersTimeoutMs', async () => {
    const quick = await startTestGateway({ config: { server: { headersTimeoutMs: 200, requestTimeoutMs: 200 } } });
    try {
      const loginBody = await rawConnection(quick.url);
      loginBody.socket.write('POST /api/v1/auth/login HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"user');
      const head = await rawConnection(quick.url);
      head.socket.write('GET /private/x HTTP/1.1\r\nhost: x\r\n');
      for (const connection of [loginBody, head]) {
        const answer = parseHead(await connection.closed);
        expectDiagnoses(answer.status, answer.rest, 408, '408 (Request Timeout) - invalid_request: the request did not arrive in time');
      }
    } finally {
      await quick.close();
    }
  });
});
